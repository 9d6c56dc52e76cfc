--!include room_base.lua
--!include room_stats.lua
--!include room_windows.lua
--!include events_lib.lua
-- room_lib.lua: the rules every room script shares (the room's keys and ARGV are in
-- room_base.lua). The loader puts this file, with what it includes, in front of each
-- script that starts with "--!include room_lib.lua"; it is never run alone.
--
-- Two clocks. `now` (Redis TIME, or the caller's) times events: joins, statistics,
-- ended tickets. `lease` times deadlines: check-ins and seats are due on it. It is
-- `now` less the time no script ran although the background sweep promised one every
-- `every` seconds (ARGV[2]): while Redis was down, restarting or frozen, or every app
-- process was gone, nobody could check in, so that time counts against nobody's place.
--
-- Ticket states (st): waiting, offered (a seat is free for it: claimed by a check-in
-- or a live connection before the offer runs out), admitted, ended. An ended ticket
-- says why: left, removed, dropped, unclaimed, grace, session, released.
--
-- Every room script replies with reply(): {code, token, state, position, waiting,
-- active, capacity, room status, now, why, name, settings version, notice, support
-- code, window (seconds: the check-in window this script granted a waiting ticket; 0
-- if it granted none)}.

local RENEWED = nil  -- the clock's "renewed", read by lease_clock()
-- What settle() left behind at its lease: line (seats) true when no overdue waiter
-- (lapsed seat) is left, so lapse_if_due() need not look
local DRAINED = nil

-- The lease clock of an existing room at `now`, given ARGV[2] (the sweep's interval in
-- seconds, '' = no sweep runs: then nothing can tell an outage from quiet, and the
-- lease clock keeps pace with `now`). A gap between runs over two intervals is time
-- the room was out of reach; all of it but one interval is skipped.
local function lease_clock(now, every_arg)
    local every = tonumber(every_arg) or 0
    local c = redis.call('HMGET', K_CLOCK, 'seen', 'skipped', 'renewed', 'pace', 'placing')
    local seen, skipped = tonumber(c[1]), tonumber(c[2]) or 0
    RENEWED = tonumber(c[3])
    PLACING = tonumber(c[5])
    read_pace(c[4], now)
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

local function end_ticket(token, t, why, now)
    redis.call('ZREM', K_LINE, token)
    redis.call('ZREM', K_CHECKIN, token)
    local was_seated = redis.call('ZREM', K_SEATS, token) == 1
    if not t then
        return
    end
    if t.id and redis.call('HGET', K_IDENTITIES, t.id) == token then
        redis.call('HDEL', K_IDENTITIES, t.id)
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
        count_emailed(t, -1)
    end
    count('ended_' .. why, now)  -- (a decayed count of its own had no reader)
    redis.call('HDEL', K_PREDICTIONS, token)
    if why == 'removed' then
        audit(now, 'remove', t, t.st)
    elseif why == 'left' then
        audit(now, 'leave', t, t.st)
    elseif why == 'released' then  -- a site let its visitor go (issue 23)
        audit(now, 'release', t, t.st)
    elseif t.st ~= 'waiting' and (why == 'grace' or why == 'session' or why == 'unclaimed') then
        audit(now, 'seat_end', t, why)  -- a seat that ended by itself: its pages closed
    end
    t.st, t.why, t.e = 'ended', why, now
    put_ticket(token, t)
    emit('visitor.ended', now, token, t, {reason = why})
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

-- The draw that picked the ticket seat() is about to seat ("draw <seed> <n> <index>"),
-- set by offer_drawn() for its audit entry; nil for a seat not drawn.
local DRAWN = nil

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
        count_emailed(t, -1)
        record('waited', now, now - t.j)
        count_wait(now - t.j)
        -- Every admission from the line is kept with its wait (a room's report reads
        -- the waits by arrival), with the wait predicted at its join when there was one
        -- (a drop's pre-queue predicts none)
        local predicted = redis.call('HGET', K_PREDICTIONS, token)
        if predicted then
            redis.call('HDEL', K_PREDICTIONS, token)
            redis.call('XADD', K_ACCURACY, 'MAXLEN', '~', ACCURACY_MAX, '*', 'at', tostring(now),
                'predicted', predicted, 'actual', tostring(now - t.j))
            count_estimate(predicted, now - t.j)
        else
            redis.call('XADD', K_ACCURACY, 'MAXLEN', '~', ACCURACY_MAX, '*', 'at', tostring(now),
                'actual', tostring(now - t.j))
        end
        created(K_ACCURACY)
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
    if DRAWN then  -- a seat drawn at random: the draw, to be checked (offer_drawn())
        from, DRAWN = DRAWN, nil
    end
    t.st, t.a = state, now
    put_ticket(token, t)
    audit(now, 'admit', t, from)
    emit('visitor.admitted', now, token, t, {state = state, from = from})
end

-- How long a seat offered to ticket `t` is held: the check-in window (an open page
-- takes it at once), or for a ticket that gave an email, email_claim_seconds if longer,
-- so its visitor can come back from the email after closing every page.
local function offer_window(t, s)
    if t.em and t.em ~= '' then
        return math.max(s.dropout, s.email_claim)
    end
    return s.dropout
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
-- overdue (not yet swept), so a dead visitor never takes a seat. A head still on a long
-- check-in window is passed over (room_windows.lua): the first of the next PASS_MAX
-- that may be offered one is. Returns the token dropped or offered (nil when nobody
-- waits, or every one looked at was passed over) and whether it was offered the seat.
local function offer_head(now, lease, s)
    local line = redis.call('ZRANGE', K_LINE, 0, 0)
    local at = 1
    while line[at] do
        local head = line[at]
        local t = get_ticket(head)
        local due = tonumber(redis.call('ZSCORE', K_CHECKIN, head))
        if not t or not due or due < lease then
            end_ticket(head, t, 'dropped', now)
            return head, false
        end
        if PLACING and tonumber(redis.call('ZSCORE', K_LINE, head)) > PLACING then
            return nil, false  -- the rest of the pre-queue goes first, once placed
        end
        if may_offer(t, s) then
            offer(head, t, now, lease + offer_window(t, s))
            return head, true
        end
        if #line == 1 then  -- the head is passed over: look at the next PASS_MAX at once
            line = redis.call('ZRANGE', K_LINE, 0, PASS_MAX)
        end
        at = at + 1
    end
    return nil, false
end

-- How many more admissions the room's admit_per_minute lets through in the clock minute
-- of `now` (math.huge without one): every admission of the minute counts (seat()
-- counts it in the history hash), an admin's too, so the limit holds whichever script
-- admits, and holds exactly, since scripts run one at a time.
local function admissions_left(now, s)
    if not s.per_minute then
        return math.huge
    end
    local done = tonumber(redis.call('HGET', K_HISTORY, math.floor(now / 60) .. ':admitted'))
    return math.max(s.per_minute - (done or 0), 0)
end

-- Random order (queueing_method random): a free seat goes to someone in line drawn at
-- random, by an index into the line drawn from a fresh seed that the seat's audit entry
-- keeps, so anyone can recompute it (webapp/domain/draw.py seat_draw_index):
--     index = (the first 48 bits of SHA-1("<seed>:<n>")) mod n
-- n being the line's length then (while a drop's start places its pre-queue, only the
-- placed part of it, numbered up to PLACING: the rest is not in line yet), the index
-- counted from the head in join order (ZRANGE). The seed is 96 bits of Redis's own
-- generator, which no caller sets. SHA-1 (Redis's own, in C) only spreads the seed
-- evenly over the line; nothing rests on it resisting collisions.
local function seat_draw_index(seed, n)
    local high = tonumber(string.sub(redis.sha1hex(seed .. ':' .. n), 1, 12), 16)
    return high % n  -- exact: below 2^48, a double holds it
end

-- One draw for a free seat under random order. The ticket drawn is offered the seat if
-- it is present (checked in within dropout_seconds: the window every ticket is granted
-- under random order), dropped if its check-in is overdue (not yet swept), or passed
-- over (still on a longer window granted under first-come order: its next check-in
-- makes it drawable). Returns the token (nil: nobody waits), whether it was offered
-- the seat, and whether it was passed over (nothing changed).
local function offer_drawn(now, lease, s)
    local n = PLACING and redis.call('ZCOUNT', K_LINE, '-inf', PLACING)
        or redis.call('ZCARD', K_LINE)
    if n == 0 then
        return nil, false, false
    end
    local seed = string.format('%06x%06x%06x%06x', math.random(0, 16777215),
        math.random(0, 16777215), math.random(0, 16777215), math.random(0, 16777215))
    local index = seat_draw_index(seed, n)
    local token = redis.call('ZRANGE', K_LINE, index, index)[1]
    local t = get_ticket(token)
    local due = tonumber(redis.call('ZSCORE', K_CHECKIN, token))
    if not t or not due or due < lease then
        end_ticket(token, t, 'dropped', now)
        return token, false, false
    end
    if not may_offer(t, s) then
        return token, false, true
    end
    DRAWN = 'draw ' .. seed .. ' ' .. n .. ' ' .. index
    offer(token, t, now, lease + offer_window(t, s))
    return token, true, false
end

-- The next free seat's holder, by the room's order: the head of the line (offer_head)
-- or, under random order, a draw (offer_drawn). Returns the token dropped, offered or
-- passed over (nil: none), whether it was offered, whether it was passed over.
local function offer_next(now, lease, s)
    if s.method == 'random' then
        return offer_drawn(now, lease, s)
    end
    local token, offered = offer_head(now, lease, s)
    return token, offered, false
end

-- Passthrough (queueing_method passthrough): everyone in line is let in, whatever the
-- free seats and admit_per_minute, up to `limit` a call from the head (the sweep calls
-- again while it finds work, so a switch to passthrough empties the line a batch per
-- call). Each is offered a seat, claimed by its next check-in as any offer is, and held
-- at least until that check-in is due, so nobody loses the seat for being on a long
-- check-in window; an overdue ticket is dropped instead. Returns how many it handled.
local function pass_through(now, lease, limit, s)
    local done = 0
    while done < limit and offers_go_on(done) do
        local head = redis.call('ZRANGE', K_LINE, 0, 0, 'WITHSCORES')
        if not head[1] or (PLACING and tonumber(head[2]) > PLACING) then
            break
        end
        local token, t = head[1], get_ticket(head[1])
        local due = tonumber(redis.call('ZSCORE', K_CHECKIN, token))
        if not t or not due or due < lease then
            end_ticket(token, t, 'dropped', now)
        else
            offer(token, t, now, math.max(lease + offer_window(t, s), due))
        end
        done = done + 1
    end
    return done
end

-- Whether a new joiner takes a seat at once: the room lets people in (open, automatic)
-- and nobody waits, a seat is free and the minute's admissions allow one; under
-- passthrough whenever the room lets people in (not while a drop's start places its
-- pre-queue, which goes first).
local function enters_at_once(s, now, waiting, seated)
    if s.status ~= 'open' or s.manual then
        return false
    elseif s.method == 'passthrough' then
        return not PLACING
    end
    return waiting == 0 and seated < s.capacity and admissions_left(now, s) > 0
end

-- Offers free seats from the line (automatic admission): to its head in line order, to
-- drawn tickets under random order, to everyone under passthrough. At most `limit`
-- tickets are looked at; under random order at most PASS_MAX draws in a row may find a
-- ticket passed over (then the rest waits for check-ins); none after OFFERS_US of the
-- call's time (room_base.lua offers_go_on()). Returns how many tickets it dropped
-- or offered a seat (a draw passed over changed nothing).
local function promote(now, lease, limit, s)
    if s.status == 'paused' or s.manual then
        return 0
    end
    if s.method == 'passthrough' then
        return pass_through(now, lease, limit, s)
    end
    local free = math.min(s.capacity - redis.call('ZCARD', K_SEATS), admissions_left(now, s))
    local done, looked, passed = 0, 0, 0
    while free > 0 and looked < limit and passed < PASS_MAX and offers_go_on(looked) do
        local token, offered, passed_over = offer_next(now, lease, s)
        if not token then
            break
        end
        looked = looked + 1
        if passed_over then
            passed = passed + 1
        else
            passed = 0
            done = done + 1
        end
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

-- A check-in: a waiter keeps the place for the window granted from where it stands
-- (room_windows.lua); an offered seat is claimed; a seat is renewed.
local function check_in(token, t, lease, s)
    if t.st == 'waiting' then
        local w = grant(token, s)
        redis.call('ZADD', K_CHECKIN, 'XX', lease + w, token)
        if t.w ~= w then  -- near the head it stays dropout_seconds: no write
            WOKE = WOKE or (w <= s.dropout and (t.w or 0) > s.dropout)
            t.w = w
            put_ticket(token, t)
        end
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
local RUNTIME_KEYS = {K_SEQ, K_LINE, K_CHECKIN, K_SEATS, K_TICKETS, K_IDENTITIES, K_ENDED, K_CLOCK,
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

local function reply(code, token, t, s, now)
    local state, why, name, position = '', '', '', 0
    if t then
        state, why, name = t.st, t.why or '', t.n or ''
        if state == 'waiting' then
            position = (ahead_of(token) or -1) + 1  -- 0: in the pre-queue, no place yet
        end
    end
    local capacity, status, version, notice = 0, '', 0, ''
    if s then
        capacity, status, version, notice = s.capacity, s.status, s.version, s.notice
    end
    return {code, token or '', state, position, line_length(),
        redis.call('ZCARD', K_SEATS), capacity, status, tostring(now), why, name, version,
        notice, t and t.sc or '', state == 'waiting' and GRANTED[token] or 0}
end

-- The upkeep of a live room at `lease`: at most BATCH items of each kind (settle()).
local function upkeep(now, lease, s)
    return settle(now, lease, BATCH, s)
end

-- The start of every room script: the room's settings s (nil: no such room) and, for a
-- live room, its lease clock and its upkeep, unless `upkeep_first` is false (the script
-- acts first and calls upkeep() after, as a leave does, so the seat it frees is offered
-- at once). A waitlist room gets s alone: its live keys stay empty, so it has no clock
-- to keep and no upkeep. Returns s, lease, and how many items the upkeep handled.
local function live_room(now, upkeep_first)
    local s = load_settings()
    if not s or s.waitlist then
        return s, nil, 0
    end
    local lease = lease_clock(now, ARGV[2])
    if upkeep_first == false then
        return s, lease, 0
    end
    return s, lease, upkeep(now, lease, s)
end

-- Before the next ticket of a batch: if a check-in made a passed-over ticket one that
-- may be offered a seat, free seats go to the line now, as the next script's upkeep
-- would (a batch is the same as its scripts one after another).
local function woken(now, lease, s)
    if WOKE then
        WOKE = false
        promote(now, lease, BATCH, s)
    end
end

-- A ticket of a room live_room() opened: t, or t (perhaps nil) and the reply to return
-- now (unknown, or gone with the reason it ended). The caller calls touch(now) at its
-- end whatever this returns (the upkeep may have made keys). A waitlist room (no
-- lease) has no live tickets.
local function ticket_in(s, now, lease, token)
    if lease then
        woken(now, lease, s)
    end
    local t = lease and get_ticket(token)
    if not t then
        return nil, reply('unknown', token, nil, s, now)
    end
    if t.st == 'ended' or lapse_if_due(token, t, now, lease) then
        return t, reply('gone', token, t, s, now)
    end
    return t, nil
end

-- The start of every script about one ticket: live_room(), then the ticket. Returns s,
-- t, nil, lease for a live ticket; otherwise s, t, and the reply to return now
-- (no_room, unknown, or gone with the reason it ended).
local function live_ticket(now, token)
    local s, lease = live_room(now)
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
