--!include chat_lib.lua
-- chat_create.lua: starts a small group chat with its first members.
-- KEYS: the chat's four keys (chat_lib.lua)
-- ARGV: 1 now, 2 kind, 3 idle seconds, 4.. member ids
-- Reply: {code, latest id}; code ok | exists (nothing written)
local now, kind, idle = ARGV[1], ARGV[2], tonumber(ARGV[3])
if redis.call('EXISTS', K_MEMBERS, K_META) > 0 then
    return {'exists', latest()}
end
local last = latest()
for i = 4, #ARGV do
    redis.call('ZADD', K_MEMBERS, last, ARGV[i])
end
redis.call('HSET', K_META, 'created', now, 'kind', kind)
touch(idle)
return {'ok', last}
