--!include conn_lib.lua
-- conn_sync.lua: a server states its current count for a user (after a release, or on
-- its heartbeat) and renews its deadline; a count of 0 removes its entry. Also the way
-- a server whose entry was dropped during a stall puts it back on its next heartbeat.
-- KEYS: the user's counts and deadlines (conn_lib.lua)
-- ARGV: 1 server id, 2 now, 3 deadline (now + ttl), 4 this server's count, 5 key TTL
-- Reply: the user's live connections across all servers
local server, now, deadline = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local count, key_ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local others = live_others(now, server)
put(server, count, deadline, key_ttl)
return others + math.max(count, 0)
