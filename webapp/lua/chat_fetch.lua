--!include chat_lib.lua
-- chat_fetch.lua: a member takes every message after their seen id, and their seen id
-- moves to the latest id. One script: two overlapping fetches of the same member run
-- one after the other, so the second gets only what the first did not (no duplicates)
-- and the seen id never moves backward. A non-member (e.g. one who just left) gets
-- nothing and nothing is written.
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 member, 2 messages kept for newcomers, 3 idle seconds
-- Reply: {code, seen id before, seen id after, missed, message JSON... in id order};
--   code ok | not_member. missed = messages after the old seen id that the history cap
--   trimmed before this member read them.
local member, keep, idle = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local seen = redis.call('ZSCORE', K_MEMBERS, member)
if not seen then
    return {'not_member', 0, 0, 0}
end
seen = tonumber(seen)
local last = latest()
if last <= seen then
    return {'ok', seen, seen, 0}
end
local found = redis.call('ZRANGEBYSCORE', K_MESSAGES, '(' .. seen, '+inf', 'WITHSCORES')
local first = last + 1
if #found > 0 then
    first = tonumber(found[2])
end
local out = {'ok', seen, last, first - seen - 1}
for i = 1, #found, 2 do
    out[#out + 1] = found[i]
end
redis.call('ZADD', K_MEMBERS, last, member)
cleanup(keep)
touch(idle)
return out
