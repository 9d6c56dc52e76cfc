--!include conn_lib.lua
-- conn_forget.lua: counts out a user's sockets on servers whose process is gone (a
-- crashed worker), found by the caller from their liveness keys.
-- KEYS: the user's counts and deadlines (conn_lib.lua)
-- ARGV: the dead servers' ids
-- Reply: how many servers were counted out
local gone = 0
for _, server in ipairs(ARGV) do
    gone = gone + redis.call('HDEL', K_COUNTS, server)
    redis.call('ZREM', K_DEADLINES, server)
end
return gone
