--!keys limits...
-- join_limits.lua: checks one join against every limit it is under and, if all pass,
-- counts it in each (webapp/domain/join_limits.py). A limit counts joins in buckets;
-- a join passes while the buckets overlapping the last window (the current one and
-- the B before it, the oldest counted whole) hold fewer than the limit's amount, so
-- no window-long span ever holds more. A refused join counts against nothing.
-- KEYS: limits, one per limit, in order: its hash, bucket number -> joins (one hash tag: the
--       client's network)
-- ARGV: 1 B, the buckets a window; then three per limit, in the same order: the amount
--       allowed, the current bucket's number, a bucket's length in milliseconds
-- Reply: {0} if counted; else {n, c(k-B), ..., c(k)}: the first limit (1-based) that
--        refused, and its buckets' counts as found, oldest first
local b = tonumber(ARGV[1])
for i = 1, #KEYS do
    local amount = tonumber(ARGV[3 * i - 1])
    local k = tonumber(ARGV[3 * i])
    local fields = {}
    for j = k - b, k do
        fields[#fields + 1] = j
    end
    local found = redis.call('HMGET', K_LIMITS[i], unpack(fields))
    local reply, sum = {i}, 0
    for j = 1, #found do
        local n = tonumber(found[j]) or 0
        sum = sum + n
        reply[#reply + 1] = n
    end
    if sum + 1 > amount then
        return reply
    end
end
for i = 1, #KEYS do
    local k = tonumber(ARGV[3 * i])
    local size = tonumber(ARGV[3 * i + 1])
    redis.call('HINCRBY', K_LIMITS[i], k, 1)
    if redis.call('HLEN', K_LIMITS[i]) > b + 1 then  -- buckets out of the window go
        for _, field in ipairs(redis.call('HKEYS', K_LIMITS[i])) do
            if tonumber(field) < k - b then
                redis.call('HDEL', K_LIMITS[i], field)
            end
        end
    end
    redis.call('PEXPIRE', K_LIMITS[i], (b + 1) * size)
end
return {0}
