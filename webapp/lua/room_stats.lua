--!include room_base.lua
-- room_stats.lua: a room's statistics, read back by the wait estimates
-- (webapp/domain/estimate.py, docs/estimates.md) and the panel: time-decayed figures of
-- events, counters for monitoring, the buckets of experienced waits, the seat-seconds
-- held, and the per-minute history of the charts. Never run alone.

local TAU = 600            -- seconds: statistics forget the past with this time constant
local TAU_SHORT = 120      -- seconds: ... the short copies of the release statistics
local TAU_LONG = 3600      -- seconds: ... and their long copies
local COPIED = {hold = true, occupied = true, busy = true}

-- Time-decayed count, sum and sum of squares of one kind of event `ev`, and the time of
-- the last event of that kind, kept in one field "<ev>" as "n s q t" (one field rather
-- than four: the hash holds fewer, so every read and write of it is cheaper;
-- WaitingRooms.stats() reads them back as "<ev>:n|s|q|t"). The weight of an
-- observation made d seconds ago is exp(-d / tau). Events that measure how fast seats
-- free up (COPIED) are also kept as "<ev>.long", forgetting with TAU_LONG (more samples
-- while the pace holds), and as "<ev>.short", forgetting with TAU_SHORT (a change shows
-- within minutes, to be told from noise against the other two); the rest forget with
-- TAU, so the figures follow a change of pace within minutes. One HMGET and one HSET
-- for all copies. `value`: a number, nil (a count only), or a function of the time of
-- the last event of kind `ev` (nil: none) giving the value.
local FIGURES = '%.14g %.14g %.14g %.14g'  -- (the precision of tostring)
local ONE_TAU, COPY_TAUS = {TAU}, {TAU, TAU_SHORT, TAU_LONG}

local function record(ev, now, value, weight)
    local names, taus = {ev}, ONE_TAU
    if COPIED[ev] then
        names, taus = {ev, ev .. '.short', ev .. '.long'}, COPY_TAUS
    end
    local f = redis.call('HMGET', K_STATS, unpack(names))
    local figures = {}
    for i, name in ipairs(names) do
        local n, s, q, last = 0, 0, 0, nil
        if f[i] then
            local a, b, c, d = string.match(f[i], '^(%S+) (%S+) (%S+) (%S+)$')
            n, s, q, last = tonumber(a) or 0, tonumber(b) or 0, tonumber(c) or 0, tonumber(d)
        else
            created(K_STATS)  -- perhaps the first statistic of all
            -- (the four fields each a copy was kept in before: no reader left)
            redis.call('HDEL', K_STATS, name .. ':n', name .. ':s', name .. ':q', name .. ':t')
        end
        figures[i] = {n, s, q, last}
    end
    if type(value) == 'function' then
        value = value(figures[1][4])
    end
    local out = {}
    for i, name in ipairs(names) do
        local n, s, q, last = unpack(figures[i])
        local w = 1
        if last and now > last then
            w = math.exp(-(now - last) / taus[i])
        end
        n = n * w + (weight or 1)
        if value then
            s = s * w + value
            q = q * w + value * value
        end
        out[#out + 1] = name
        out[#out + 1] = string.format(FIGURES, n, s, q, math.max(now, last or now))
    end
    redis.call('HSET', K_STATS, unpack(out))
end

-- Counters that only grow, for monitoring (Prometheus counters read them at scrape
-- time): "count:<what>" in the stats hash.
local function count(what, now)
    if redis.call('HINCRBY', K_STATS, 'count:' .. what, 1) == 1 then
        created(K_STATS)
    end
    if redis.call('HINCRBY', K_HISTORY, math.floor(now / 60) .. ':' .. what, 1) == 1 then
        created(K_HISTORY)
    end
end

-- The room's joins in the last sixty seconds, from the history count() keeps: this
-- minute's, and the minute before's for the part of it still inside the window (the
-- rule of webapp/domain/challenge.py, Challenges.recent_joins, which the puzzle's cost
-- is scaled by).
local function recent_joins(now)
    local minute = math.floor(now / 60)
    local found = redis.call('HMGET', K_HISTORY, minute .. ':joined', (minute - 1) .. ':joined')
    local inside = 1 - (now - minute * 60) / 60
    return (tonumber(found[1]) or 0) + (tonumber(found[2]) or 0) * inside
end

-- How many in line gave an email ("line:emails"): their offers are held up to
-- email_claim_seconds (offer_window()), which the first estimate counts (pace.py
-- offer_hold). `t` joins the count (by 1) or leaves it (by -1) while it is in the line
-- (a number in it, not in a drop's pre-queue) with an email.
local function count_emailed(t, by)
    if t.em and t.em ~= '' and t.seq and not t.pq then
        local n = redis.call('HINCRBY', K_STATS, 'line:emails', by)
        if n < 0 then  -- the line outlived an idle room's statistics: count from none
            redis.call('HSET', K_STATS, 'line:emails', 0)
        end
        if n <= 1 then
            created(K_STATS)
        end
    end
end

-- Upper bounds (seconds) of the buckets of experienced waits: "waits:le:<bound>" counts
-- the admissions from the line whose wait fell in that bucket (not cumulative), and
-- "waits:sum" adds the waits up.
local WAIT_BUCKETS = {5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}

local function count_wait(wait)
    local bound = '+Inf'
    for _, b in ipairs(WAIT_BUCKETS) do
        if wait <= b then
            bound = tostring(b)
            break
        end
    end
    redis.call('HINCRBY', K_STATS, 'waits:le:' .. bound, 1)
    redis.call('HINCRBYFLOAT', K_STATS, 'waits:sum', wait)
end

-- How far off the estimate told at the join was, for /metrics (issue 31): the
-- admissions from the line scored ("estimates:scored"), those whose actual wait fell in
-- the range shown ("estimates:in_range"), and the absolute error in seconds in buckets
-- as the waits' ("estimates:le:<bound>", not cumulative; "estimates:sum").
-- `predicted`: room_predict.lua's "wait,low,high" shown, maybe followed by the model's
-- own ",wait,sd" (the calibration's, read in Python): only the first three are scored.
local ERROR_BUCKETS = {15, 30, 60, 120, 300, 600, 1800}

local function count_estimate(predicted, actual)
    local wait, low, high = string.match(predicted, '^([^,]+),([^,]+),([^,]+)')
    wait, low, high = tonumber(wait), tonumber(low), tonumber(high)
    if not (wait and low and high) then
        return
    end
    local error = math.abs(wait - actual)
    local bound = '+Inf'
    for _, b in ipairs(ERROR_BUCKETS) do
        if error <= b then
            bound = tostring(b)
            break
        end
    end
    redis.call('HINCRBY', K_STATS, 'estimates:scored', 1)
    if low <= actual and actual <= high then
        redis.call('HINCRBY', K_STATS, 'estimates:in_range', 1)
    end
    redis.call('HINCRBY', K_STATS, 'estimates:le:' .. bound, 1)
    redis.call('HINCRBYFLOAT', K_STATS, 'estimates:sum', error)
end

-- Records the seat-seconds held since the previous change of occupancy ("occupied:s"),
-- called just before a seat is given or released: finished holds per seat-second held
-- is the release rate of one seat even while the room fills up or empties. A change at
-- the instant of the last one this script recorded adds no seat-seconds, so it records
-- nothing (only the count of changes would move, and it has no reader): a batch of
-- joins seated at one `now` records once.
local OCCUPIED_AT = nil
local function record_occupied(now, seats)
    if OCCUPIED_AT == now then
        return
    end
    OCCUPIED_AT = now
    record('occupied', now, function(last)
        return (last and now > last) and seats * (now - last) or 0
    end)
end
