--!keys members messages ids meta
-- chat_lib.lua: what every chat script shares. The loader puts this file in front of
-- each script that starts with "--!include chat_lib.lua"; it is never run alone.
--
-- KEYS, by name (every chat script takes these four, all with the chat's hash tag):
--   1 members   zset   member -> highest message id that member has seen
--   2 messages  zset   JSON message -> its id (ids are consecutive: INCR and ZADD
--                      happen in the same script, so a missing id was trimmed, never
--                      "not stored yet")
--   3 ids       string the last message id handed out
--   4 meta      hash   created, kind
-- A chat script touches no other key: the per-user seen index lives in another slot
-- and is written by the caller afterwards.

local function latest()
    return tonumber(redis.call('GET', K_IDS) or '0')
end

-- Every write renews the idle expiry of all four keys together, so a chat nobody
-- touches for `idle` seconds goes away whole (the bound for members who never leave).
local function touch(idle)
    redis.call('EXPIRE', K_MEMBERS, idle)
    redis.call('EXPIRE', K_MESSAGES, idle)
    redis.call('EXPIRE', K_IDS, idle)
    redis.call('EXPIRE', K_META, idle)
end

-- Removes the messages every current member has seen, except the newest `keep`
-- (kept as recent history for newcomers). Returns how many went.
local function cleanup(keep)
    local lowest = redis.call('ZRANGE', K_MEMBERS, 0, 0, 'WITHSCORES')
    if #lowest == 0 then
        return 0
    end
    local cutoff = math.min(tonumber(lowest[2]), latest() - keep)
    if cutoff < 1 then
        return 0
    end
    return redis.call('ZREMRANGEBYSCORE', K_MESSAGES, '-inf', cutoff)
end
