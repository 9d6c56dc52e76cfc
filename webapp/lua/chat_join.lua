--!include chat_lib.lua
-- chat_join.lua: a member joins a chat (creating it if it does not exist yet).
-- A new member starts at the latest message; a member who is already in (a reconnect)
-- keeps their seen id, so their next fetch brings everything sent while they were away.
-- Being one script, a join cannot interleave with the last member's leave: either the
-- leave deleted the chat first (the joiner starts a fresh chat at id 0) or the join
-- came first (then that leave was not the last one).
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 member, 2 now, 3 kind (kept if the chat exists), 4 history count, 5 idle seconds
-- Reply: {seen id, latest id, rejoined 0|1, up to `history` messages (JSON) with
--   id <= seen id, oldest first}
local member, now, kind = ARGV[1], ARGV[2], ARGV[3]
local history, idle = tonumber(ARGV[4]), tonumber(ARGV[5])
local last = latest()
local seen = redis.call('ZSCORE', K_MEMBERS, member)
local rejoined = 1
if seen then
    seen = tonumber(seen)
else
    seen, rejoined = last, 0
    redis.call('ZADD', K_MEMBERS, seen, member)
end
redis.call('HSETNX', K_META, 'created', now)
redis.call('HSETNX', K_META, 'kind', kind)
local out = {seen, last, rejoined}
if history > 0 then
    local recent = redis.call('ZREVRANGEBYSCORE', K_MESSAGES, seen, '-inf', 'LIMIT', 0, history)
    for i = #recent, 1, -1 do
        out[#out + 1] = recent[i]
    end
end
touch(idle)
return out
