-- hook_enqueue.lua: one event into an endpoint's outbox, once (the worker may read an
-- event again after a crash: the same webhook-id is not queued twice). One ticket's
-- deliveries go one at a time, in order: only the oldest of them is in the queue; the
-- next is queued when it is delivered or failed (hook_done.lua).
-- KEYS (HookKeys, all {hook:<id>}): 1 endpoint hash, 2 deliveries hash (webhook-id ->
--   JSON {type, room, at, body, st, n tries, first, next, last, code, err, o, w}),
--   3 queue zset (webhook-id -> due), 4 order hash (ticket -> its undelivered
--   webhook-ids, oldest first, space-separated), 5 recent zset (webhook-id -> event
--   time), 6 stats hash (pending, delivered, failed, retry, le:<bound>, seconds)
-- ARGV: 1 webhook-id, 2 ordering key (the ticket's public id; '' none), 3 the record
--   (JSON), 4 the event's time, 5 now, 6 finished deliveries to keep
-- Reply: 1 queued, 0 queued before, -1 no such endpoint
local id, order = ARGV[1], ARGV[2]
if redis.call('HEXISTS', KEYS[2], id) == 1 then
    return 0
end
if redis.call('EXISTS', KEYS[1]) == 0 then
    return -1
end
redis.call('HSET', KEYS[2], id, ARGV[3])
redis.call('ZADD', KEYS[5], ARGV[4], id)
redis.call('HINCRBY', KEYS[6], 'pending', 1)
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
    redis.call('ZADD', KEYS[3], ARGV[5], id)
end
-- The oldest finished deliveries past the number kept are forgotten (a few per call;
-- unfinished ones are kept whatever their age)
local over = redis.call('ZCARD', KEYS[5]) - tonumber(ARGV[6])
if over > 0 then
    for _, old in ipairs(redis.call('ZRANGE', KEYS[5], 0, math.min(over, 8) - 1)) do
        local raw = redis.call('HGET', KEYS[2], old)
        local st = raw and cjson.decode(raw).st
        if not raw or st == 'delivered' or st == 'failed' then
            redis.call('HDEL', KEYS[2], old)
            redis.call('ZREM', KEYS[5], old)
        end
    end
end
return 1
