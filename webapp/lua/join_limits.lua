-- join_limits.lua: checks one join against every limit it is under and, if all pass,
-- counts it in each (webapp/domain/join_limits.py: sliding-window counters). A refused
-- join counts against nothing.
-- KEYS: two per limit, in order: the previous window's counter, the current window's
--       (strings with a TTL of two windows; one hash tag: the client's network)
-- ARGV: three per limit, in the same order: the amount allowed, the milliseconds
--       elapsed in the current window, the window's length in milliseconds
-- Reply: {0, 0, 0} if counted; else {n, previous, current}: the first limit (1-based)
--        that refused, and its two counters as found
local limits = #KEYS / 2
local found = {}
for i = 1, limits do
    local previous = tonumber(redis.call('GET', KEYS[2 * i - 1]) or '0')
    local current = tonumber(redis.call('GET', KEYS[2 * i]) or '0')
    local amount = tonumber(ARGV[3 * i - 2])
    local elapsed = tonumber(ARGV[3 * i - 1])
    local window = tonumber(ARGV[3 * i])
    if previous * (window - elapsed) / window + current + 1 > amount then  -- as refuses()
        return {i, previous, current}
    end
    found[i] = window
end
for i = 1, limits do
    if redis.call('INCR', KEYS[2 * i]) == 1 then
        redis.call('PEXPIRE', KEYS[2 * i], 2 * found[i])
    end
end
return {0, 0, 0}
