-- room_lib.lua: the rules every room script shares. The loader puts this file in front
-- of each script that starts with "--!include room_lib.lua"; it is never run alone.
--
-- KEYS (every room script takes the same sixteen, all with the room's hash tag):
--   1 settings    hash   capacity, dropout_seconds, grace_seconds, session_seconds,
--                        max_wait_seconds, max_line_length, status, admission_mode,
--                        version, notice, notice_at, born (when the room was made)
--   2 seq         string the line's sequence: one number per joiner, never reused
--   3 line        zset   waiting ticket -> sequence number (the order of the line)
--   4 checkin     zset   waiting ticket -> time it drops out unless it checks in
--   5 seats       zset   seated ticket  -> time the seat is given up unless renewed
--   6 tickets     hash   ticket -> JSON {st, why, id, n, sc, seq, j, a, e, sock, k, c,
--                        em, lg: the email told when a seat is offered, its language}
--   7 identities  hash   identity -> its live ticket (one person, one place)
--   8 ended       zset   ended ticket -> time it ended (remembered RETAIN seconds)
--   9 stats       hash   time-decayed statistics: "<event>" = "n s q t" (record()), and
--                        counters: "count:<what>", "waits:*", "line:admitted", "free:from"
--  10 clock       hash   the lease clock: seen (latest script run), skipped (seconds);
--                        renewed (when every key's TTL was last renewed, see touch())
--  11 audit       stream admin actions and admissions: kind, who, code, name, detail
--  12 codes       hash   support code -> ticket
--  13 history     hash   "<minute>:<figure>" -> count (joined, admitted, ended_<why>)
--                        or sample (w: waiting, s: seats), a day of minutes kept
--  14 predictions hash   waiting ticket -> "wait,low,high" predicted at its join
--  15 accuracy    stream predicted against actual wait of each admission from the line
--  16 outbox      stream notices for the mailer (webapp/mailer.py). A live room writes
--                        kind offered (a seat offered to a ticket that gave an email: em,
--                        lg on its record): entry (the token), email, name, lang, at,
--                        until (the offer's deadline); capped, TTL as a runtime key. A
--                        waitlist room's outbox is the same key (waitlist_lib.lua).
--
-- Two clocks. `now` (Redis TIME, or the caller's) times events: joins, statistics,
-- ended tickets. `lease` times deadlines: check-ins and seats are due on it. It is
-- `now` less the time no script ran although the background sweep promised one every
-- `every` seconds (ARGV[2]): while Redis was down, restarting or frozen, or every app
-- process was gone, nobody could check in, so that time counts against nobody's place.
--
-- Ticket states (st): waiting, offered (a seat is free for it: claimed by a check-in
-- or a live connection before the offer runs out), admitted, ended. An ended ticket
-- says why: left, removed, dropped, unclaimed, grace, session.
--
-- Every room script replies with reply(): {code, token, state, position, waiting,
-- active, capacity, room status, now, why, name, settings version, notice, support
-- code}.

local K_SETTINGS, K_SEQ, K_LINE, K_CHECKIN, K_SEATS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local K_TICKETS, K_IDENT, K_ENDED, K_STATS, K_CLOCK = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local K_AUDIT, K_CODES, K_HISTORY = KEYS[11], KEYS[12], KEYS[13]
local K_PREDICTIONS, K_ACCURACY, K_OUTBOX = KEYS[14], KEYS[15], KEYS[16]

local TAU = 600            -- seconds: statistics forget the past with this time constant
local TAU_SHORT = 120      -- seconds: ... the short copies of the release statistics
local TAU_LONG = 3600      -- seconds: ... and their long copies
local COPIED = {hold = true, occupied = true, busy = true}
local RETAIN = 3600        -- seconds an ended ticket is remembered (410, not 404)
local IDLE_TTL = 172800    -- seconds: an untouched room's runtime keys expire (a bound)
local STATS_TTL = 2592000  -- seconds: an untouched room's statistics expire
local RENEW_EVERY = 3600   -- seconds between renewals of every key's TTL (touch())

local SEEN_EVERY = 0.25    -- seconds: how often "seen" is written (its precision)
local AUDIT_MAX = 10000    -- entries an audit stream keeps (about)
local ACCURACY_MAX = 5000  -- admissions whose prediction is kept, for the panel (about)
local OUTBOX_MAX = 10000   -- notices a live room's outbox keeps (about; the mailer reads it)
local HISTORY_MINUTES = 1440  -- minutes of history kept for the charts
local HISTORY_FIGURES = {'joined', 'admitted', 'ended_left', 'ended_removed', 'ended_dropped',
    'ended_unclaimed', 'ended_grace', 'ended_session', 'w', 's'}
local CODE_CHARS = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'  -- Crockford's base 32: no I, L, O, U

-- Who acts: 'engine' unless a script acts for an admin (it sets ACTOR from its ARGV).
local ACTOR = 'engine'

-- The keys this script may have created (a write to a missing key makes one without a
-- TTL): touch() gives them their TTL before the script ends. Marked where a write can
-- create its key, from what the script already knows (a count that was 0, a counter
-- that is now 1), so a call that creates nothing renews nothing.
local CREATED = {}
local CREATED_ORDER = {}
local function created(key)
    if not CREATED[key] then
        CREATED[key] = true
        CREATED_ORDER[#CREATED_ORDER + 1] = key
    end
end
local RENEWED = nil  -- the clock's "renewed", read by lease_clock()
-- What settle() left behind at its lease: line (seats) true when no overdue waiter
-- (lapsed seat) is left, so lapse_if_due() need not look
local DRAINED = nil

local function clock(arg)
    if arg ~= nil and arg ~= '' then
        return tonumber(arg)
    end
    local t = redis.call('TIME')
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- The lease clock of an existing room at `now`, given ARGV[2] (the sweep's interval in
-- seconds, '' = no sweep runs: then nothing can tell an outage from quiet, and the
-- lease clock keeps pace with `now`). A gap between runs over two intervals is time
-- the room was out of reach; all of it but one interval is skipped.
local function lease_clock(now, every_arg)
    local every = tonumber(every_arg) or 0
    local c = redis.call('HMGET', K_CLOCK, 'seen', 'skipped', 'renewed')
    local seen, skipped = tonumber(c[1]), tonumber(c[2]) or 0
    RENEWED = tonumber(c[3])
    if not seen then
        created(K_CLOCK)
    end
    if every > 0 and seen and now - seen > 2 * every then
        skipped = skipped + (now - seen - every)
        redis.call('HSET', K_CLOCK, 'seen', tostring(now), 'skipped', tostring(skipped))
    elseif not seen or now - seen >= SEEN_EVERY or now < seen then
        redis.call('HSET', K_CLOCK, 'seen', tostring(now))
    end
    return now - skipped
end

-- The settings the room scripts read (a room's hash also holds its title, description
-- and other words for people, which no script needs, and a waitlist's own settings,
-- which waitlist_lib.lua reads): one HMGET of ten fields, cheaper than HGETALL (or
-- more fields) on every check-in.
local function load_settings()
    local v = redis.call('HMGET', K_SETTINGS, 'capacity', 'dropout_seconds', 'grace_seconds',
        'session_seconds', 'max_line_length', 'status', 'admission_mode', 'version', 'notice',
        'kind')
    if not v[1] then  -- every room has a capacity: no room
        return nil
    end
    return {
        capacity = tonumber(v[1]),
        dropout = tonumber(v[2]),
        grace = tonumber(v[3]),
        session = tonumber(v[4]),
        max_line = tonumber(v[5]),  -- nil when unset ('') or absent
        status = v[6] or nil,
        manual = v[7] == 'manual',  -- nobody is seated but by an admin
        version = tonumber(v[8]) or 0,  -- bumped by every change of the settings
        notice = v[9] or '',
        waitlist = v[10] == 'waitlist',  -- entries by email, no presence (waitlist_lib.lua)
    }
end

local function get_ticket(token)
    local raw = redis.call('HGET', K_TICKETS, token)
    if not raw then
        return nil
    end
    return cjson.decode(raw)
end

local function put_ticket(token, t)
    redis.call('HSET', K_TICKETS, token, cjson.encode(t))
end

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

-- One entry of the room's audit log. `t` may be nil (an action on the room itself).
local function audit(now, kind, t, detail)
    local code, name = '', ''
    if t then
        code, name = t.sc or '', t.n or ''
    end
    redis.call('XADD', K_AUDIT, 'MAXLEN', '~', AUDIT_MAX, '*', 'at', tostring(now),
        'kind', kind, 'who', ACTOR, 'code', code, 'name', name, 'detail', detail or '')
    created(K_AUDIT)
end

-- A short code naming a ticket to an admin (support), unique in the room while the
-- ticket is remembered: `proposed` (6 characters the caller drew), or on a clash (or
-- none proposed) 6 characters from the ticket's hash (another hash on a clash).
local function new_code(token, proposed)
    if proposed ~= '' and redis.call('HSETNX', K_CODES, proposed, token) == 1 then
        return proposed
    end
    for attempt = 0, 9 do
        local h = redis.sha1hex(token .. ':' .. attempt)
        local n = tonumber(string.sub(h, 1, 8), 16)
        local code = ''
        for _ = 1, 6 do
            local i = n % 32
            code = code .. string.sub(CODE_CHARS, i + 1, i + 1)
            n = math.floor(n / 32)
        end
        if redis.call('HSETNX', K_CODES, code, token) == 1 then
            return code
        end
    end
    return ''
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

local function end_ticket(token, t, why, now)
    redis.call('ZREM', K_LINE, token)
    redis.call('ZREM', K_CHECKIN, token)
    local was_seated = redis.call('ZREM', K_SEATS, token) == 1
    if not t then
        return
    end
    if t.id and redis.call('HGET', K_IDENT, t.id) == token then
        redis.call('HDEL', K_IDENT, t.id)
    end
    if was_seated then
        local held = redis.call('ZCARD', K_SEATS) + 1
        record_occupied(now, held)
        -- A release measures the service rate only while people wait for it: record the
        -- seat-seconds held between two releases that both found people in line (the gap
        -- times the seats held; "free:from" marks the last such release): seat-seconds
        -- per release are the pace of one seat, so the rate is known at any capacity.
        local from = tonumber(redis.call('HGET', K_STATS, 'free:from'))
        if redis.call('ZCARD', K_LINE) > 0 then
            if from and now >= from then
                record('busy', now, (now - from) * held)
            end
            redis.call('HSET', K_STATS, 'free:from', tostring(now))
        elseif from then
            redis.call('HDEL', K_STATS, 'free:from')
        end
        if t.a then
            record('hold', now, now - t.a)
        end
    elseif t.st == 'waiting' then
        record('abandon', now, now - t.j)
    end
    count('ended_' .. why, now)  -- (a decayed count of its own had no reader)
    redis.call('HDEL', K_PREDICTIONS, token)
    if why == 'removed' then
        audit(now, 'remove', t, t.st)
    elseif why == 'left' then
        audit(now, 'leave', t, t.st)
    end
    t.st, t.why, t.e = 'ended', why, now
    put_ticket(token, t)
    redis.call('ZADD', K_ENDED, now, token)
    created(K_ENDED)
end

local function lapse_reason(t)
    if not t or t.st == 'offered' then
        return 'unclaimed'
    elseif t.sock then
        return 'grace'
    end
    return 'session'
end

-- Gives a seat to a ticket, until `deadline` unless renewed.
local function seat(token, t, now, deadline, state)
    local held = redis.call('ZCARD', K_SEATS)
    record_occupied(now, held)
    if t.seq then  -- only a ticket that joined the line has a place in it
        redis.call('ZREM', K_LINE, token)
        redis.call('ZREM', K_CHECKIN, token)
    end
    redis.call('ZADD', K_SEATS, deadline, token)
    if held == 0 then
        created(K_SEATS)
    end
    if t.st == 'waiting' and t.seq then
        record('waited', now, now - t.j)
        count_wait(now - t.j)
        local predicted = redis.call('HGET', K_PREDICTIONS, token)
        if predicted then
            redis.call('HDEL', K_PREDICTIONS, token)
            redis.call('XADD', K_ACCURACY, 'MAXLEN', '~', ACCURACY_MAX, '*', 'at', tostring(now),
                'predicted', predicted, 'actual', tostring(now - t.j))
            created(K_ACCURACY)
        end
        -- Of the k people ahead of this ticket when it joined, how many were let in
        -- first (the rest dropped out): "ahead" sums that count, weighted by k. Line
        -- admissions are counted in "line:admitted"; the ticket kept the count at join.
        local before = redis.call('HINCRBY', K_STATS, 'line:admitted', 1) - 1
        if t.k and t.k > 0 and t.c then
            local first = before - t.c
            if first >= 0 and first <= t.k then
                record('ahead', now, first, t.k)
            end
        end
    end
    count('admitted', now)
    local from = t.seq and 'line' or 'direct'
    t.st, t.a = state, now
    put_ticket(token, t)
    audit(now, 'admit', t, from)
end

-- Offers a seat to a ticket until `deadline`; a ticket that gave an email (em, lg) is
-- told by the outbox in this same script, so an offer and its notice are never apart.
-- A waitlist room never offers seats, so its outbox (the same key) keeps no TTL.
local function offer(token, t, now, deadline)
    seat(token, t, now, deadline, 'offered')
    if t.em and t.em ~= '' then
        redis.call('XADD', K_OUTBOX, 'MAXLEN', '~', OUTBOX_MAX, '*', 'kind', 'offered',
            'entry', token, 'email', t.em, 'name', t.n or '', 'lang', t.lg or 'en',
            'at', tostring(now), 'until', tostring(deadline))
        redis.call('EXPIRE', K_OUTBOX, IDLE_TTL)
    end
end

-- Offers a seat to the head of the line, or drops the head instead if its check-in is
-- overdue (not yet swept), so a dead visitor never takes a seat. Returns the head's
-- token (nil when nobody waits) and whether it was offered the seat.
local function offer_head(now, lease, s)
    local head = redis.call('ZRANGE', K_LINE, 0, 0)[1]
    if not head then
        return nil, false
    end
    local t = get_ticket(head)
    local due = tonumber(redis.call('ZSCORE', K_CHECKIN, head))
    if not t or not due or due < lease then
        end_ticket(head, t, 'dropped', now)
        return head, false
    end
    offer(head, t, now, lease + s.dropout)
    return head, true
end

-- Offers free seats to the head of the line, in line order (automatic admission).
local function promote(now, lease, limit, s)
    if s.status == 'paused' or s.manual then
        return 0
    end
    local free = s.capacity - redis.call('ZCARD', K_SEATS)
    local done = 0
    while free > 0 and done < limit do
        local head, offered = offer_head(now, lease, s)
        if not head then
            break
        end
        done = done + 1
        if offered then
            free = free - 1
        end
    end
    return done
end

-- Bounded upkeep, run at the start of every room script and by the background sweep:
-- drop overdue waiters, free lapsed seats, fill free seats from the line, forget old
-- ended tickets. Returns how many items it handled (the sweep repeats while > 0).
local function settle(now, lease, limit, s)
    local overdue = redis.call('ZRANGEBYSCORE', K_CHECKIN, '-inf', '(' .. lease, 'LIMIT', 0, limit)
    for _, token in ipairs(overdue) do
        end_ticket(token, get_ticket(token), 'dropped', now)
    end
    local lapsed = redis.call('ZRANGEBYSCORE', K_SEATS, '-inf', '(' .. lease, 'LIMIT', 0, limit)
    for _, token in ipairs(lapsed) do
        local t = get_ticket(token)
        end_ticket(token, t, lapse_reason(t), now)
    end
    DRAINED = {lease = lease, line = #overdue < limit, seats = #lapsed < limit}
    local promoted = promote(now, lease, limit, s)
    local old = redis.call('ZRANGEBYSCORE', K_ENDED, '-inf', '(' .. (now - RETAIN), 'LIMIT', 0, limit)
    if #old > 0 then
        for _, raw in ipairs(redis.call('HMGET', K_TICKETS, unpack(old))) do
            local t = raw and cjson.decode(raw)
            if t and t.sc and t.sc ~= '' then
                redis.call('HDEL', K_CODES, t.sc)
            end
        end
        redis.call('HDEL', K_TICKETS, unpack(old))
        redis.call('ZREM', K_ENDED, unpack(old))
    end
    return #overdue + #lapsed + #old + promoted
end

-- Ends the ticket now if its own deadline has passed (settle works in bounded batches,
-- so a caller must not renew a ticket that is already overdue). Returns true if ended.
-- When this script's settle() ended every overdue one at this lease, none is left to
-- look for (a waiting ticket is always in K_CHECKIN, a seated one in K_SEATS).
local function lapse_if_due(token, t, now, lease)
    local drained = DRAINED and DRAINED.lease == lease
    if t.st == 'waiting' then
        if drained and DRAINED.line then
            return false
        end
        local due = tonumber(redis.call('ZSCORE', K_CHECKIN, token))
        if not due or due < lease then
            end_ticket(token, t, 'dropped', now)
            return true
        end
    elseif t.st == 'offered' or t.st == 'admitted' then
        if drained and DRAINED.seats then
            return false
        end
        local due = tonumber(redis.call('ZSCORE', K_SEATS, token))
        if not due or due < lease then
            end_ticket(token, t, lapse_reason(t), now)
            return true
        end
    end
    return false
end

-- A check-in: a waiter keeps the place; an offered seat is claimed; a seat is renewed.
local function check_in(token, t, lease, s)
    if t.st == 'waiting' then
        redis.call('ZADD', K_CHECKIN, 'XX', lease + s.dropout, token)
    elseif t.st == 'offered' or t.st == 'admitted' then
        redis.call('ZADD', K_SEATS, 'XX', 'GT', lease + s.session, token)
        if t.st == 'offered' then
            t.st = 'admitted'
            put_ticket(token, t)
        end
    end
end

-- Every key of a room has a TTL, so the keys of a room nobody uses any more expire
-- (deleting the room removes them all at once): IDLE_TTL for the runtime keys,
-- STATS_TTL for the statistics and logs.
local LONG_LIVED = {}
for _, key in ipairs({K_STATS, K_AUDIT, K_HISTORY, K_ACCURACY}) do
    LONG_LIVED[key] = true
end
local RUNTIME_KEYS = {K_SEQ, K_LINE, K_CHECKIN, K_SEATS, K_TICKETS, K_IDENT, K_ENDED, K_CLOCK,
    K_CODES, K_PREDICTIONS, K_STATS, K_AUDIT, K_HISTORY, K_ACCURACY}

local function renew(key)
    redis.call('EXPIRE', key, LONG_LIVED[key] and STATS_TTL or IDLE_TTL)
end

-- Gives the keys this script may have created their TTL (the background sweep: it
-- must not keep an unused room's keys alive, so it renews nothing else).
local function renew_created()
    for _, key in ipairs(CREATED_ORDER) do
        renew(key)
    end
end

-- Renews the TTLs at the end of a script. Every key when `now` is nil (the admins'
-- scripts: rare) or when the clock says the last renewal of all is RENEW_EVERY old;
-- otherwise only the keys this script may have created (CREATED). So a check-in that
-- only moves its own deadline renews nothing, and every key still has a TTL: set when
-- it is made, renewed at least every RENEW_EVERY seconds while the room is used; an
-- untouched room's keys expire between IDLE_TTL - RENEW_EVERY and IDLE_TTL after its
-- last use. Call it after lease_clock() (which reads "renewed").
local function touch(now)
    if now == nil or RENEWED == nil or now - RENEWED >= RENEW_EVERY or now < RENEWED then
        for _, key in ipairs(RUNTIME_KEYS) do
            renew(key)
        end
        if now ~= nil then
            redis.call('HSET', K_CLOCK, 'renewed', tostring(now))
        end
        return
    end
    renew_created()
end

-- Samples the line and the seats once a minute for the charts, and forgets minutes
-- older than a day (at most an hour of them per call).
local function sample_history(now)
    local minute = math.floor(now / 60)
    if redis.call('HSETNX', K_HISTORY, minute .. ':w', redis.call('ZCARD', K_LINE)) == 0 then
        return
    end
    created(K_HISTORY)
    redis.call('HSET', K_HISTORY, minute .. ':s', redis.call('ZCARD', K_SEATS))
    local oldest = minute - HISTORY_MINUTES
    local trimmed = tonumber(redis.call('HGET', K_HISTORY, 'trimmed')) or oldest - 1
    local from = math.max(trimmed + 1, oldest - 60)
    if from > oldest then
        return
    end
    local fields = {}
    for m = from, math.min(oldest, from + 59) do
        for _, figure in ipairs(HISTORY_FIGURES) do
            fields[#fields + 1] = m .. ':' .. figure
        end
    end
    redis.call('HDEL', K_HISTORY, unpack(fields))
    redis.call('HSET', K_HISTORY, 'trimmed', math.min(oldest, from + 59))
end

local function reply(code, token, t, s, now)
    local state, why, name, position = '', '', '', 0
    if t then
        state, why, name = t.st, t.why or '', t.n or ''
        if state == 'waiting' then
            position = (redis.call('ZRANK', K_LINE, token) or -1) + 1
        end
    end
    local capacity, status, version, notice = 0, '', 0, ''
    if s then
        capacity, status, version, notice = s.capacity, s.status, s.version, s.notice
    end
    return {code, token or '', state, position, redis.call('ZCARD', K_LINE),
        redis.call('ZCARD', K_SEATS), capacity, status, tostring(now), why, name, version,
        notice, t and t.sc or ''}
end

-- The start of every script about tickets: the room, its lease clock, its upkeep.
-- Returns s and lease; or nil when there is no such room.
local function live_room(now, every_arg, batch)
    local s = load_settings()
    if not s then
        return nil
    end
    local lease = lease_clock(now, every_arg)
    settle(now, lease, batch, s)
    return s, lease
end

-- A ticket of a room live_room() opened: t, or t (perhaps nil) and the reply to return
-- now (unknown, or gone with the reason it ended). The caller calls touch(now) at its
-- end whatever this returns (the upkeep may have made keys).
local function ticket_in(s, now, lease, token)
    local t = get_ticket(token)
    if not t then
        return nil, reply('unknown', token, nil, s, now)
    end
    if t.st == 'ended' or lapse_if_due(token, t, now, lease) then
        return t, reply('gone', token, t, s, now)
    end
    return t, nil
end

-- The start of every script about one ticket: the room, its lease clock, its upkeep,
-- the ticket. Returns s, t, nil, lease for a live ticket; otherwise s, t, and the reply
-- to return now (no_room, unknown, or gone with the reason it ended).
local function live_ticket(now, every_arg, token, batch)
    local s, lease = live_room(now, every_arg, batch)
    if not s then
        return nil, nil, reply('no_room', token, nil, nil, now)
    end
    local t, refusal = ticket_in(s, now, lease, token)
    if refusal then
        touch(now)
        return s, t, refusal
    end
    return s, t, nil, lease
end
