-- join_limits_lib.lua: one join's limits (webapp/domain/join_limits.py), for
-- join_limits.lua (a waitlist's sign-up, a join that solves a puzzle after its count)
-- and room_join.lua (every other join: counted in the join's own call). A limit counts
-- joins in buckets; a join passes while the buckets overlapping the last window (the
-- current one and the b before it, the oldest counted whole) hold fewer than the
-- limit's amount, so no window-long span ever holds more. Nothing is written until
-- every limit passed, so a refused join counts against nothing.
-- A limit is {key, amount, the current bucket's number, a bucket's length in ms}: the
-- key a hash, bucket number -> joins (under the room's hash tag).

-- The limits of one join: their keys from `keys` (the script's list of them) from
-- index `key` on, and from ARGV from `arg` on: n limits, then (n > 0) b, the buckets a
-- window, then three per limit: amount, bucket, length. Returns the limits, b, and the
-- next key's and argument's index.
local function read_limits(keys, key, arg)
    local n = tonumber(ARGV[arg])
    local limits, b = {}, 0
    if n > 0 then
        b = tonumber(ARGV[arg + 1])
        for i = 1, n do
            local at = arg + 2 + 3 * (i - 1)
            limits[i] = {keys[key + i - 1], tonumber(ARGV[at]), tonumber(ARGV[at + 1]),
                tonumber(ARGV[at + 2])}
        end
    end
    return limits, b, key + n, arg + 1 + (n > 0 and 1 + 3 * n or 0)
end

-- nil if the join passes every limit; else {i, c(k-b), ..., c(k)}: the first limit
-- (1-based) that refused it and its buckets' counts as found, oldest first.
local function limits_refuse(limits, b)
    for i, limit in ipairs(limits) do
        local k = limit[3]
        local fields = {}
        for j = k - b, k do
            fields[#fields + 1] = j
        end
        local found = redis.call('HMGET', limit[1], unpack(fields))
        local refusal, sum = {i}, 0
        for j = 1, #found do
            local n = tonumber(found[j]) or 0
            sum = sum + n
            refusal[#refusal + 1] = n
        end
        if sum + 1 > limit[2] then
            return refusal
        end
    end
    return nil
end

-- Counts the join in every limit (after limits_refuse found none refusing).
local function limits_count(limits, b)
    for _, limit in ipairs(limits) do
        local key, k, size = limit[1], limit[3], limit[4]
        redis.call('HINCRBY', key, k, 1)
        if redis.call('HLEN', key) > b + 1 then  -- buckets out of the window go
            for _, field in ipairs(redis.call('HKEYS', key)) do
                if tonumber(field) < k - b then
                    redis.call('HDEL', key, field)
                end
            end
        end
        redis.call('PEXPIRE', key, (b + 1) * size)
    end
end
