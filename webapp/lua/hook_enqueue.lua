-- hook_enqueue.lua: events into an endpoint's outbox, each once (the worker may read an
-- event again after a crash: the same webhook-id is not queued twice). One ticket's
-- deliveries go one at a time, in order: only the oldest of them is in the queue; the
-- next is queued when it is delivered or failed (hook_done.lua).
-- KEYS (HookKeys, all {hook:<id>}): 1 endpoint hash, 2 deliveries hash (webhook-id ->
--   JSON {type, room, at, body, st, n tries, first, next, last, code, err, o, w}),
--   3 queue zset (webhook-id -> due), 4 order hash (ticket -> its undelivered
--   webhook-ids, oldest first, space-separated), 5 recent zset (webhook-id -> event
--   time), 6 stats hash (pending, delivered, failed, retry, le:<bound>, seconds)
-- ARGV: 1 now, 2 finished deliveries to keep, then four per event: webhook-id, ordering
--   key (the ticket's public id; '' none), the record (JSON), the event's time
-- Reply: how many were queued (-1: no such endpoint)
if redis.call('EXISTS', KEYS[1]) == 0 then
    return -1
end
local now, queued = ARGV[1], 0
for i = 3, #ARGV, 4 do
    local id, order = ARGV[i], ARGV[i + 1]
    if redis.call('HSETNX', KEYS[2], id, ARGV[i + 2]) == 1 then
        queued = queued + 1
        redis.call('ZADD', KEYS[5], ARGV[i + 3], id)
        local first = true
        if order ~= '' then
            local waiting = redis.call('HGET', KEYS[4], order)
            if waiting then
                redis.call('HSET', KEYS[4], order, waiting .. ' ' .. id)
                first = false
            else
                redis.call('HSET', KEYS[4], order, id)
            end
        end
        if first then
            redis.call('ZADD', KEYS[3], now, id)
        end
    end
end
if queued > 0 then
    redis.call('HINCRBY', KEYS[6], 'pending', queued)
end
-- The oldest finished deliveries past the number kept are forgotten (a few more than
-- were queued; unfinished ones are kept whatever their age)
local over = redis.call('ZCARD', KEYS[5]) - tonumber(ARGV[2])
if over > 0 then
    for _, old in ipairs(redis.call('ZRANGE', KEYS[5], 0, math.min(over, queued + 8) - 1)) do
        local raw = redis.call('HGET', KEYS[2], old)
        local st = raw and cjson.decode(raw).st
        if not raw or st == 'delivered' or st == 'failed' then
            redis.call('HDEL', KEYS[2], old)
            redis.call('ZREM', KEYS[5], old)
        end
    end
end
return queued
