--!keys counts deadlines
-- conn_lib.lua: what the connection-limit scripts share. The loader puts this file in
-- front of each script that starts with "--!include conn_lib.lua"; it is never run alone.
--
-- KEYS, by name (both with the user's hash tag {user:<id>}):
--   1 counts     hash  server id -> this user's open websockets on that server
--   2 deadlines  zset  server id -> time after which that server's count stops counting
-- A server renews its deadline on every heartbeat; a server that dies stops renewing,
-- and the next script to see its deadline passed drops its count. No key scan needed.

-- Drops the counts of servers whose deadline passed (or that have none); returns the
-- sum of the other live servers' counts, leaving out `server`'s own.
local function live_others(now, server)
    local dead = redis.call('ZRANGEBYSCORE', K_DEADLINES, '-inf', '(' .. now)
    if #dead > 0 then
        redis.call('ZREMRANGEBYSCORE', K_DEADLINES, '-inf', '(' .. now)
        redis.call('HDEL', K_COUNTS, unpack(dead))
    end
    local total = 0
    local raw = redis.call('HGETALL', K_COUNTS)
    for i = 1, #raw, 2 do
        if not redis.call('ZSCORE', K_DEADLINES, raw[i]) then
            redis.call('HDEL', K_COUNTS, raw[i])
        elseif raw[i] ~= server then
            total = total + tonumber(raw[i + 1])
        end
    end
    return total
end

-- Records `server`'s own count (the server's memory is the truth for it) with a new
-- deadline, or removes its entry when the count is 0.
local function put(server, count, deadline, key_ttl)
    if count > 0 then
        redis.call('HSET', K_COUNTS, server, count)
        redis.call('ZADD', K_DEADLINES, deadline, server)
        redis.call('EXPIRE', K_COUNTS, key_ttl)
        redis.call('EXPIRE', K_DEADLINES, key_ttl)
    else
        redis.call('HDEL', K_COUNTS, server)
        redis.call('ZREM', K_DEADLINES, server)
    end
end
