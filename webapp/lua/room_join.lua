--!include room_lib.lua
--!include codes_lib.lua
--!include drop_lib.lua
--!include join_limits_lib.lua
--!keys limits...
-- room_join.lua: visitors ask to enter a room, in the order given: the same as one
-- script per joiner run back to back at one `now`, in one call (webapp/domain/rooms.py
-- coalesces a process's concurrent joins of a room, as it does check-ins).
-- KEYS: the room's (room_lib.lua), its drop's (drop_lib.lua), then limits: each
--       joiner's limits' keys in turn (join_limits_lib.lua; the room's hash tag)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), then per
--       joiner: a fresh token, identity ('' = none), display name, most
--       people allowed ahead of a new joiner ('' = no limit; -1: a seat at once or
--       nothing, never a place in line or the pre-queue), the settings version the
--       caller's limit was worked out from ('' = any), an email to be told at when a
--       seat is offered ('' = none; already normalised), the visitor's language (with
--       the email), a support code for the ticket ('' = make one; on a clash with a
--       code in use, one is made), the puzzle's threshold ('' = the caller decided the
--       puzzle; a number: the room's puzzle is "auto" and the joiner brought no
--       solution, so a new place is refused ('puzzle') while the room's joins in the
--       last minute (recent_joins) are above it), then its limits (read_limits: 0 for
--       none). A new place (not a re-join) is counted under them, or refused
--       ('throttled', before 'puzzle': a throttled client solves nothing) and counted
--       nowhere; a join the room refuses counts nowhere either.
-- The room's max_line_length setting caps the line. Refusal `rejecting`: the room's
-- queueing_method is reject (no new joins; re-joins of a live ticket still check in).
-- Reply: one reply() of room_lib.lua per joiner, in order; code ok | no_room | stale |
--   closed | full | too_long | taken | waitlist | not_open_yet | due | event_ended |
--   sold_out | puzzle | throttled (a scheduled drop: before its pre-queue, its start owed (the caller runs
--   drop_start.lua and joins again), after its end, no stock left). stale: the settings changed since the
--   caller read them; nothing was done for that joiner. waitlist: a waitlist room,
--   joined with an email (waitlist_join.lua). Joining again with a live identity is a
--   check-in of the same ticket.
-- A short code naming a ticket to an admin (support), unique in the room while the
-- ticket is remembered: `proposed` (6 characters the caller drew), or on a clash (or
-- none proposed) 6 characters from the ticket's hash (another hash on a clash).
local function new_code(token, proposed)
    if proposed ~= '' and redis.call('HSETNX', K_CODES, proposed, token) == 1 then
        return proposed
    end
    return unique_code(K_CODES, token, ':', 6, 10) or ''
end

local now = clock(ARGV[1])
local FIRST, EACH = 4, 9
local DROP = nil  -- the room's schedule (drop_lib.lua), read once per call

local function join_one(s, lease, limits, b, token, identity, name, max_ahead, version, email,
                        lang, code, puzzle)
    woken(now, lease, s)  -- (room_lib.lua)
    if version ~= '' and tonumber(version) ~= s.version then
        return reply('stale', '', nil, s, now)
    end
    if identity ~= '' then
        local existing = redis.call('HGET', K_IDENTITIES, identity)
        local t = existing and get_ticket(existing)
        if t and t.st ~= 'ended' and not lapse_if_due(existing, t, now, lease) then
            check_in(existing, t, lease, s)
            return reply('ok', existing, t, s, now)
        end
    end
    -- A refusal below changes nothing but the upkeep's work (touch(now) at the end
    -- gives what it made a TTL).
    local throttled = limits_refuse(limits, b)
    if throttled then
        table.insert(throttled, 1, 'throttled')
        return throttled
    end
    if puzzle ~= '' and recent_joins(now) > tonumber(puzzle) then
        return reply('puzzle', '', nil, s, now)
    end
    if s.status == 'closed' then
        return reply('closed', '', nil, s, now)
    elseif s.method == 'reject' then  -- queueing_method reject: no new joins
        return reply('rejecting', '', nil, s, now)
    end
    if redis.call('HEXISTS', K_TICKETS, token) == 1 then
        return reply('taken', '', nil, s, now)
    end
    local phase = drop_phase(DROP, now)
    local refused = (phase == 'before' and 'not_open_yet') or (phase == 'due' and 'due')
        or (phase == 'ended' and 'event_ended') or (sold_out(DROP) and 'sold_out')
    if refused then
        return reply(refused, '', nil, s, now)
    end
    local in_line = redis.call('ZCARD', K_LINE)
    local waiting = PLACING and in_line + unplaced() or in_line  -- (room_base.lua)
    local seated = redis.call('ZCARD', K_SEATS)
    local enters = enters_at_once(s, now, waiting, seated)  -- (room_lib.lua)
    if max_ahead == '-1' and phase == 'prequeue' then  -- a seat or nothing: nothing
        return reply('too_long', '', nil, s, now)
    end
    if not enters then
        if s.max_line and waiting >= s.max_line then
            return reply('full', '', nil, s, now)
        end
        if max_ahead ~= '' and waiting > tonumber(max_ahead) then
            return reply('too_long', '', nil, s, now)
        end
    end
    if in_line == 0 and seated == 0 then
        -- Nobody waits or sits: the tickets and their codes may have been forgotten,
        -- and their hashes gone with them.
        created(K_TICKETS)
        created(K_CODES)
    end
    local t = {st = 'waiting', n = name, j = now, sc = new_code(token, code)}
    if identity ~= '' then
        t.id = identity
    end
    if email ~= '' then
        t.em, t.lg = email, lang ~= '' and lang or 'en'
    end
    emit('visitor.joined', now, token, t, {prequeue = phase == 'prequeue'})
    if phase == 'prequeue' then
        prequeue(token, t, now, lease, s)
    elseif enters then
        seat(token, t, now, lease + s.session, 'admitted')
    else
        t.seq = redis.call('INCR', K_SEQ)
        if t.seq == 1 then
            created(K_SEQ)
        end
        t.k = waiting  -- people ahead, and line admissions so far: the "ahead" statistic
        t.c = tonumber(redis.call('HGET', K_STATS, 'line:admitted')) or 0
        t.w = grant(token, s, waiting)  -- its check-in window (room_windows.lua)
        WOKE = WOKE or t.w <= s.dropout  -- it may take a free seat the line passed over
        redis.call('ZADD', K_LINE, t.seq, token)
        redis.call('ZADD', K_CHECKIN, lease + t.w, token)
        if in_line == 0 then
            created(K_LINE)
            created(K_CHECKIN)
        end
        put_ticket(token, t)
        count_emailed(t, 1)
    end
    count('joined', now)
    limits_count(limits, b)
    if identity ~= '' then
        redis.call('HSET', K_IDENTITIES, identity, token)
        created(K_IDENTITIES)  -- one EXPIRE: cheaper than finding out whether the hash was empty
    end
    return reply('ok', token, t, s, now)
end

local joiners = {}  -- {limits, b, its nine fields}, in order
local key, arg = 1, FIRST
while arg <= #ARGV do
    local limits, b, next_key, next_arg = read_limits(K_LIMITS, key, arg + EACH)
    joiners[#joiners + 1] = {limits, b, unpack(ARGV, arg, arg + EACH - 1)}
    key, arg = next_key, next_arg
end
local replies = {}
local s, lease = live_room(now)
if not s or s.waitlist then
    for _ = 1, #joiners do
        replies[#replies + 1] = s and reply('waitlist', '', nil, s, now)
            or reply('no_room', '', nil, nil, now)
    end
    return replies
end
DROP = drop_schedule()
for _, joiner in ipairs(joiners) do
    replies[#replies + 1] = join_one(s, lease, unpack(joiner))
end
touch(now)
return replies
