--!include conn_lib.lua
-- conn_acquire.lua: a server asks for one more websocket slot for a user.
-- Checks first, then writes: a refusal writes nothing but the pruning of dead servers.
-- KEYS: the user's counts and deadlines (conn_lib.lua)
-- ARGV: 1 server id, 2 now, 3 deadline (now + ttl), 4 most connections per user,
--       5 this server's count if allowed (its current count + 1), 6 key TTL seconds
-- Reply: {allowed 1|0, the user's live connections after this call}
local server, now, deadline = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local most, wanted, key_ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local others = live_others(now, server)
if others + wanted > most then
    return {0, others + wanted - 1}
end
put(server, wanted, deadline, key_ttl)
return {1, others + wanted}
