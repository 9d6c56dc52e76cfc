--!include chat_lib.lua
-- chat_ack.lua: a member has been shown every message up to an id: their seen id moves
-- there (never backward; never past the latest id) and what everyone has seen is
-- cleaned up. A non-member (one who left meanwhile) is not brought back.
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 member, 2 seen up to this id, 3 messages kept for newcomers, 4 idle seconds
-- Reply: {code, seen id now}; code ok | not_member
local member, upto = ARGV[1], math.min(tonumber(ARGV[2]), latest())
local keep, idle = tonumber(ARGV[3]), tonumber(ARGV[4])
local seen = redis.call('ZSCORE', K_MEMBERS, member)
if not seen then
    return {'not_member', 0}
end
if upto > tonumber(seen) then
    redis.call('ZADD', K_MEMBERS, upto, member)
    seen = upto
    cleanup(keep)
    touch(idle)
end
return {'ok', tonumber(seen)}
