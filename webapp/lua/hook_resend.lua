--!keys endpoint deliveries queue stats
-- hook_resend.lua: "send again": a delivery is due now, with the same webhook-id; a
-- finished one is pending again, with 24 hours of tries from now, and out of its
-- ticket's order (an admin's resend of an old event goes at once).
-- KEYS, by name: endpoint hash, deliveries hash, queue zset, stats hash
-- ARGV: 1 webhook-id, 2 now
-- Reply: 1 due now, 0 no such delivery
local raw = redis.call('HGET', K_DELIVERIES, ARGV[1])
if not raw or redis.call('EXISTS', K_ENDPOINT) == 0 then
    return 0
end
local d = cjson.decode(raw)
if d.st == 'delivered' or d.st == 'failed' then
    d.st, d.first, d.o, d.next = 'pending', nil, nil, nil
    redis.call('HINCRBY', K_STATS, 'pending', 1)
    redis.call('HSET', K_DELIVERIES, ARGV[1], cjson.encode(d))
elseif d.st == 'sending' then
    return 1  -- on its way now
end
redis.call('ZADD', K_QUEUE, ARGV[2], ARGV[1])
return 1
