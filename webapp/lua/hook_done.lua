-- hook_done.lua: how tries of deliveries went, recorded by the worker that sent them:
-- delivered (a 2xx), retry (due again at its next try) or failed (24 hours of tries).
-- A delivered or failed one lets its ticket's next event go (hook_enqueue.lua). An
-- endpoint whose tries have failed for ARGV 2 seconds with no success between, or
-- since the first try of a delivery given up on, is disabled.
-- KEYS: the endpoint's six (hook_enqueue.lua)
-- ARGV: 1 worker, 2 seconds of failures that disable the endpoint, then eight per try:
--   webhook-id, when it ended, outcome (delivered | retry | failed), next try, the
--   response's status (0: none), error, the delivery time's histogram field, the
--   delivery time (seconds: the event to its 2xx)
-- Reply: how many were recorded (a delivery another worker holds now is not)
local recorded = 0
for i = 3, #ARGV, 8 do
    local id, now, outcome = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
    local raw = redis.call('HGET', KEYS[2], id)
    local d = raw and cjson.decode(raw)
    if d and d.st == 'sending' and d.w == ARGV[1] then
        recorded = recorded + 1
        d.w, d.last, d.code, d.err = nil, now, tonumber(ARGV[i + 4]), ARGV[i + 5]
        local function finish()
            d.next = nil
            redis.call('ZREM', KEYS[3], id)
            redis.call('HINCRBY', KEYS[6], 'pending', -1)
            if d.o and d.o ~= '' then
                local rest = {}
                for other in string.gmatch(redis.call('HGET', KEYS[4], d.o) or '', '%S+') do
                    if other ~= id then
                        rest[#rest + 1] = other
                    end
                end
                if #rest == 0 then
                    redis.call('HDEL', KEYS[4], d.o)
                else
                    redis.call('HSET', KEYS[4], d.o, table.concat(rest, ' '))
                    redis.call('ZADD', KEYS[3], now, rest[1])
                end
            end
        end
        if outcome == 'delivered' then
            d.st = 'delivered'
            finish()
            redis.call('HINCRBY', KEYS[6], 'delivered', 1)
            redis.call('HINCRBY', KEYS[6], ARGV[i + 6], 1)
            redis.call('HINCRBYFLOAT', KEYS[6], 'seconds', ARGV[i + 7])
            redis.call('HDEL', KEYS[1], 'failing')
        else
            local failing = tonumber(redis.call('HGET', KEYS[1], 'failing'))
            if not failing then
                failing = now
                redis.call('HSET', KEYS[1], 'failing', ARGV[i + 1])
            end
            -- Failing for a day, or since this delivery's first try when it is given up on
            local given_up = outcome == 'failed' and failing <= (d.first or now)
            if (given_up or now - failing >= tonumber(ARGV[2]))
                and redis.call('HGET', KEYS[1], 'enabled') == '1' then
                redis.call('HSET', KEYS[1], 'enabled', '0', 'disabled', ARGV[i + 1])
            end
            if outcome == 'failed' then
                d.st = 'failed'
                finish()
                redis.call('HINCRBY', KEYS[6], 'failed', 1)
            else
                d.st, d.next = 'retry', tonumber(ARGV[i + 3])
                redis.call('ZADD', KEYS[3], d.next, id)
                redis.call('HINCRBY', KEYS[6], 'retry', 1)
            end
        end
        redis.call('HSET', KEYS[2], id, cjson.encode(d))
    end
end
return recorded
