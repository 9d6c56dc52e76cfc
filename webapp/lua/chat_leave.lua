--!include chat_lib.lua
-- chat_leave.lua: a member leaves; the last one out deletes the chat and its counter.
-- A leaver's seen id stops holding cleanup back at once. A fetch that runs after this
-- script finds no member and writes nothing, so it cannot bring the leaver back.
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 member, 2 messages kept for newcomers, 3 idle seconds
-- Reply: {code, members left}; code left | deleted | not_member (nothing written)
local member, keep, idle = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('ZREM', K_MEMBERS, member) == 0 then
    return {'not_member', redis.call('ZCARD', K_MEMBERS)}
end
local left = redis.call('ZCARD', K_MEMBERS)
if left == 0 then
    redis.call('DEL', K_MEMBERS, K_MESSAGES, K_IDS, K_META)
    return {'deleted', 0}
end
cleanup(keep)
touch(idle)
return {'left', left}
