--!keys deliveries outbox
-- Records how one send ended and, when it is final (sent, failed for good, or skipped),
-- acknowledges the outbox message in the same script: the 'sent' marker is set before
-- the acknowledgement, atomically, so no worker sends a notice marked sent.
-- K_DELIVERIES deliveries hash (and its counts "#sent", "#retry", "#failed", "#skipped":
--   notices in that state now)   K_OUTBOX outbox stream
-- ARGV[1] field   ARGV[2] worker   ARGV[3] now   ARGV[4] state: sent, retry, failed, skipped
-- (skipped: not needed any more, never sent)
-- ARGV[5] next try (retry)   ARGV[6] error text   ARGV[7] group   ARGV[8] stream id
-- Reply: 1 recorded, 0 another worker holds the notice now (nothing changed)
local raw = redis.call('HGET', K_DELIVERIES, ARGV[1])
local d = raw and cjson.decode(raw) or {n = 0}
if d.st == 'sent' then
    redis.call('XACK', K_OUTBOX, ARGV[7], ARGV[8])
    return 0
end
if d.w ~= ARGV[2] and ARGV[4] ~= 'sent' then
    return 0
end
if d.st == 'retry' or d.st == 'failed' then  -- another worker's record, taken over
    redis.call('HINCRBY', K_DELIVERIES, '#' .. d.st, -1)
end
redis.call('HINCRBY', K_DELIVERIES, '#' .. ARGV[4], 1)
d.st, d.at, d.w = ARGV[4], tonumber(ARGV[3]), ARGV[2]
d['until'] = nil
if ARGV[4] == 'retry' then d.next = tonumber(ARGV[5]) else d.next = nil end
if ARGV[6] ~= '' then d.err = ARGV[6] end
redis.call('HSET', K_DELIVERIES, ARGV[1], cjson.encode(d))
if ARGV[4] ~= 'retry' then
    redis.call('XACK', K_OUTBOX, ARGV[7], ARGV[8])
end
return 1
