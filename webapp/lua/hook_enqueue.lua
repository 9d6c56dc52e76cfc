--!keys endpoint deliveries queue order recent stats
-- hook_enqueue.lua: events into an endpoint's outbox, each once (the worker may read an
-- event again after a crash: the same webhook-id is not queued twice). One ticket's
-- deliveries go one at a time, in order: only the oldest of them is in the queue; the
-- next is queued when it is delivered or failed (hook_done.lua).
-- KEYS, by name (HookKeys, all {hook:<id>}): endpoint hash, deliveries hash (webhook-id
--   -> JSON {type, room, at, body, st, n tries, first, next, last, code, err, o, w}),
--   queue zset (webhook-id -> due), order hash (ticket -> its undelivered webhook-ids,
--   oldest first, space-separated), recent zset (webhook-id -> event time), stats hash
--   (pending, delivered, failed, retry, le:<bound>, seconds)
-- ARGV: 1 now, 2 finished deliveries to keep, then four per event: webhook-id, ordering
--   key (the ticket's public id; '' none), the record (JSON), the event's time
-- Reply: how many were queued (-1: no such endpoint)
if redis.call('EXISTS', K_ENDPOINT) == 0 then
    return -1
end
local now, queued = ARGV[1], 0
for i = 3, #ARGV, 4 do
    local id, order = ARGV[i], ARGV[i + 1]
    if redis.call('HSETNX', K_DELIVERIES, id, ARGV[i + 2]) == 1 then
        queued = queued + 1
        redis.call('ZADD', K_RECENT, ARGV[i + 3], id)
        local first = true
        if order ~= '' then
            local waiting = redis.call('HGET', K_ORDER, order)
            if waiting then
                redis.call('HSET', K_ORDER, order, waiting .. ' ' .. id)
                first = false
            else
                redis.call('HSET', K_ORDER, order, id)
            end
        end
        if first then
            redis.call('ZADD', K_QUEUE, now, id)
        end
    end
end
if queued > 0 then
    redis.call('HINCRBY', K_STATS, 'pending', queued)
end
-- The oldest finished deliveries past the number kept are forgotten (a few more than
-- were queued; unfinished ones are kept whatever their age)
local over = redis.call('ZCARD', K_RECENT) - tonumber(ARGV[2])
if over > 0 then
    for _, old in ipairs(redis.call('ZRANGE', K_RECENT, 0, math.min(over, queued + 8) - 1)) do
        local raw = redis.call('HGET', K_DELIVERIES, old)
        local st = raw and cjson.decode(raw).st
        if not raw or st == 'delivered' or st == 'failed' then
            redis.call('HDEL', K_DELIVERIES, old)
            redis.call('ZREM', K_RECENT, old)
        end
    end
end
return queued
