--!keys deliveries
-- Claims one notice for sending (the mailer): the 'sending' marker with a lease, unless
-- it was sent already or another worker's lease still runs.
-- K_DELIVERIES deliveries  hash: "<entry>:<kind>" -> JSON {st, n, w, until, at, mid, err};
--                     and the counts "#sent", "#retry", "#failed", "#skipped" (no entry id
--                     has '#')
-- ARGV[1] field "<entry>:<kind>"   ARGV[2] worker   ARGV[3] now   ARGV[4] lease seconds
-- ARGV[5] message id (the SMTP Message-ID made from the idempotency key)
-- Reply: {'go', attempt} | {'sent' or 'failed' or 'skipped', 0} (done before) | {'busy', 0} |
--        {'wait', 0} (backoff not over)
local raw = redis.call('HGET', K_DELIVERIES, ARGV[1])
local now, lease = tonumber(ARGV[3]), tonumber(ARGV[4])
local d = raw and cjson.decode(raw) or {n = 0}
if d.st == 'sent' or d.st == 'failed' or d.st == 'skipped' then
    return {d.st, 0}
end
if d.st == 'sending' and d.w ~= ARGV[2] and (d['until'] or 0) > now then
    return {'busy', 0}
end
if d.st == 'retry' and (d.next or 0) > now then
    return {'wait', 0}
end
if d.st == 'retry' then
    redis.call('HINCRBY', K_DELIVERIES, '#retry', -1)
end
d.st, d.w, d['until'], d.at, d.mid = 'sending', ARGV[2], now + lease, now, ARGV[5]
d.n = (d.n or 0) + 1
redis.call('HSET', K_DELIVERIES, ARGV[1], cjson.encode(d))
return {'go', d.n}
