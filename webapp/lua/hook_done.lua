-- hook_done.lua: how one try of a delivery went, recorded by the worker that sent it:
-- delivered (a 2xx), retry (due again at ARGV 5) or failed (24 hours of tries). A
-- delivered or failed one lets the ticket's next event go (hook_enqueue.lua). An
-- endpoint whose tries have failed for ARGV 8 seconds with no success between, or
-- since the first try of a delivery given up on, is disabled.
-- KEYS: the endpoint's six (hook_enqueue.lua)
-- ARGV: 1 webhook-id, 2 worker, 3 now, 4 outcome (delivered | retry | failed), 5 next
--   try, 6 the response's status (0: none), 7 error, 8 seconds of failures that disable
--   the endpoint, 9 the delivery time's histogram field, 10 the delivery time (seconds)
-- Reply: 1 recorded, 0 not this worker's delivery now (nothing changed)
local id, now, outcome = ARGV[1], tonumber(ARGV[3]), ARGV[4]
local raw = redis.call('HGET', KEYS[2], id)
if not raw then
    return 0
end
local d = cjson.decode(raw)
if d.st ~= 'sending' or d.w ~= ARGV[2] then
    return 0
end
d.w, d.last, d.code, d.err = nil, now, tonumber(ARGV[6]), ARGV[7]
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
    redis.call('HINCRBY', KEYS[6], ARGV[9], 1)
    redis.call('HINCRBYFLOAT', KEYS[6], 'seconds', ARGV[10])
    redis.call('HDEL', KEYS[1], 'failing')
else
    local failing = tonumber(redis.call('HGET', KEYS[1], 'failing'))
    if not failing then
        failing = now
        redis.call('HSET', KEYS[1], 'failing', ARGV[3])
    end
    -- Failing for a day, or since this delivery's first try when it is given up on
    local given_up = outcome == 'failed' and failing <= (d.first or now)
    if (given_up or now - failing >= tonumber(ARGV[8]))
        and redis.call('HGET', KEYS[1], 'enabled') == '1' then
        redis.call('HSET', KEYS[1], 'enabled', '0', 'disabled', ARGV[3])
    end
    if outcome == 'failed' then
        d.st = 'failed'
        finish()
        redis.call('HINCRBY', KEYS[6], 'failed', 1)
    else
        d.st, d.next = 'retry', tonumber(ARGV[5])
        redis.call('ZADD', KEYS[3], d.next, id)
        redis.call('HINCRBY', KEYS[6], 'retry', 1)
    end
end
redis.call('HSET', KEYS[2], id, cjson.encode(d))
return 1
