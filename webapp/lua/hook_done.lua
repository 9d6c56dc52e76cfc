--!keys endpoint deliveries queue order stats
-- hook_done.lua: how tries of deliveries went, recorded by the worker that sent them:
-- delivered (a 2xx), retry (due again at its next try) or failed (24 hours of tries).
-- A delivered or failed one lets its ticket's next event go (hook_enqueue.lua). An
-- endpoint whose tries have failed for ARGV 2 seconds with no success between, or
-- since the first try of a delivery given up on, is disabled.
-- KEYS, by name: endpoint, deliveries, queue, order, stats (hook_enqueue.lua)
-- ARGV: 1 worker, 2 seconds of failures that disable the endpoint, then eight per try:
--   webhook-id, when it ended, outcome (delivered | retry | failed), next try, the
--   response's status (0: none), error, the delivery time's histogram field, the
--   delivery time (seconds: the event to its 2xx)
-- Reply: how many were recorded (a delivery another worker holds now is not)
local recorded = 0
for i = 3, #ARGV, 8 do
    local id, now, outcome = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
    local raw = redis.call('HGET', K_DELIVERIES, id)
    local d = raw and cjson.decode(raw)
    if d and d.st == 'sending' and d.w == ARGV[1] then
        recorded = recorded + 1
        d.w, d.last, d.code, d.err = nil, now, tonumber(ARGV[i + 4]), ARGV[i + 5]
        local function finish()
            d.next = nil
            redis.call('ZREM', K_QUEUE, id)
            redis.call('HINCRBY', K_STATS, 'pending', -1)
            if d.o and d.o ~= '' then
                local rest = {}
                for other in string.gmatch(redis.call('HGET', K_ORDER, d.o) or '', '%S+') do
                    if other ~= id then
                        rest[#rest + 1] = other
                    end
                end
                if #rest == 0 then
                    redis.call('HDEL', K_ORDER, d.o)
                else
                    redis.call('HSET', K_ORDER, d.o, table.concat(rest, ' '))
                    redis.call('ZADD', K_QUEUE, now, rest[1])
                end
            end
        end
        if outcome == 'delivered' then
            d.st = 'delivered'
            finish()
            redis.call('HINCRBY', K_STATS, 'delivered', 1)
            redis.call('HINCRBY', K_STATS, ARGV[i + 6], 1)
            redis.call('HINCRBYFLOAT', K_STATS, 'seconds', ARGV[i + 7])
            redis.call('HDEL', K_ENDPOINT, 'failing')
        else
            local failing = tonumber(redis.call('HGET', K_ENDPOINT, 'failing'))
            if not failing then
                failing = now
                redis.call('HSET', K_ENDPOINT, 'failing', ARGV[i + 1])
            end
            -- Failing for a day, or since this delivery's first try when it is given up on
            local given_up = outcome == 'failed' and failing <= (d.first or now)
            if (given_up or now - failing >= tonumber(ARGV[2]))
                and redis.call('HGET', K_ENDPOINT, 'enabled') == '1' then
                redis.call('HSET', K_ENDPOINT, 'enabled', '0', 'disabled', ARGV[i + 1])
            end
            if outcome == 'failed' then
                d.st = 'failed'
                finish()
                redis.call('HINCRBY', K_STATS, 'failed', 1)
            else
                d.st, d.next = 'retry', tonumber(ARGV[i + 3])
                redis.call('ZADD', K_QUEUE, d.next, id)
                redis.call('HINCRBY', K_STATS, 'retry', 1)
            end
        end
        redis.call('HSET', K_DELIVERIES, id, cjson.encode(d))
    end
end
return recorded
