--!include chat_lib.lua
-- chat_send.lua: a member sends a message: a new id and the stored message in one
-- atomic step, so there is no lock for a crashed sender to leave behind and no reader
-- can see id n+1 before id n is stored.
-- The caller builds the JSON body; this script puts the id in front:
--   '{"id":' .. id .. ',' .. body   (body = the rest of a JSON object, after its '{')
-- Past `cap` messages the oldest are trimmed, whoever has not read them yet.
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 sender id, 2 body, 3 history cap, 4 idle seconds
-- Reply: {code, id}; code ok | not_member (nothing written)
local sender, body, cap, idle = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if not redis.call('ZSCORE', K_MEMBERS, sender) then
    return {'not_member', 0}
end
local id = redis.call('INCR', K_IDS)
redis.call('ZADD', K_MESSAGES, id, '{"id":' .. id .. ',' .. body)
redis.call('ZREMRANGEBYRANK', K_MESSAGES, 0, -(cap + 1))
touch(idle)
return {'ok', id}
