--!include chat_lib.lua
-- chat_read.lua: the messages after an id, without touching anyone's seen id. Live
-- delivery reads with each socket's own cursor, so two tabs of one member both get
-- every message; the member's seen id moves on with chat_ack.lua.
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 after this id, 2 at most this many messages
-- Reply: {latest id, missed, message JSON... in id order}; missed = messages after the
--   given id that the history cap trimmed (ids are consecutive, so a hole was trimmed)
local after, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local last = latest()
local out = {last, 0}
if last <= after then
    return out
end
local found = redis.call('ZRANGEBYSCORE', K_MESSAGES, '(' .. after, '+inf', 'LIMIT', 0, limit)
if #found > 0 then
    out[2] = cjson.decode(found[1]).id - after - 1
else
    out[2] = last - after
end
for i = 1, #found do
    out[#out + 1] = found[i]
end
return out
