--!keys endpoint deliveries queue
-- hook_claim.lua: the deliveries of an enabled endpoint due now, taken by one worker:
-- each is 'sending' with one more try, and due again when the lease ends (the worker
-- died: another, or the same one restarted, sends it again, with the same webhook-id).
-- KEYS, by name: endpoint hash, deliveries hash, queue zset (hook_enqueue.lua)
-- ARGV: 1 now, 2 lease seconds, 3 worker, 4 most to take
-- Reply: {webhook-id, record JSON, ...}
if redis.call('HGET', K_ENDPOINT, 'enabled') ~= '1' then
    return {}
end
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_QUEUE, '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))) do
    local raw = redis.call('HGET', K_DELIVERIES, id)
    if not raw then
        redis.call('ZREM', K_QUEUE, id)
    else
        local d = cjson.decode(raw)
        d.st, d.w, d.n = 'sending', ARGV[3], (d.n or 0) + 1
        d.first = d.first or now
        raw = cjson.encode(d)
        redis.call('HSET', K_DELIVERIES, id, raw)
        redis.call('ZADD', K_QUEUE, now + lease, id)
        out[#out + 1] = id
        out[#out + 1] = raw
    end
end
return out
