--!include room_lib.lua
-- room_join.lua: a visitor asks to enter a room.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 sweep interval ('' = none), 3 a fresh token,
--       4 identity ('' = none), 5 display name, 6 most people allowed ahead of a new
--       joiner ('' = no limit), 7 upkeep batch size, 8 the settings version the caller's
--       limit was worked out from ('' = any), 9 an email to be told at when a seat is
--       offered ('' = none; already normalised), 10 the visitor's language (with 9)
-- The room's max_line_length setting caps the line.
-- Reply: reply() of room_lib.lua; code ok | no_room | stale | closed | full | too_long |
--   taken | waitlist. stale: the settings changed since the caller read them; nothing
--   was done. waitlist: a waitlist room, joined with an email (waitlist_join.lua).
--   Joining again with a live identity is a check-in of the same ticket.
local now, token, identity, name = clock(ARGV[1]), ARGV[3], ARGV[4], ARGV[5]
local s = load_settings()
if not s then
    return reply('no_room', '', nil, nil, now)
end
if s.waitlist then
    return reply('waitlist', '', nil, s, now)
end
if ARGV[8] ~= '' and tonumber(ARGV[8]) ~= s.version then
    return reply('stale', '', nil, s, now)
end
local lease = lease_clock(now, ARGV[2])
settle(now, lease, tonumber(ARGV[7]), s)

if identity ~= '' then
    local existing = redis.call('HGET', K_IDENT, identity)
    local t = existing and get_ticket(existing)
    if t and t.st ~= 'ended' and not lapse_if_due(existing, t, now, lease) then
        check_in(existing, t, lease, s)
        touch(now)
        return reply('ok', existing, t, s, now)
    end
end

-- A refusal below changes nothing but the upkeep's work: touch(now) gives what it made
-- a TTL.
if s.status == 'closed' then
    touch(now)
    return reply('closed', '', nil, s, now)
end
if redis.call('HEXISTS', K_TICKETS, token) == 1 then
    touch(now)
    return reply('taken', '', nil, s, now)
end

local waiting = redis.call('ZCARD', K_LINE)
local seated = redis.call('ZCARD', K_SEATS)
if s.status ~= 'open' or s.manual or waiting > 0 or seated >= s.capacity then
    if s.max_line and waiting >= s.max_line then
        touch(now)
        return reply('full', '', nil, s, now)
    end
    if ARGV[6] ~= '' and waiting > tonumber(ARGV[6]) then
        touch(now)
        return reply('too_long', '', nil, s, now)
    end
end
if waiting == 0 and seated == 0 then
    -- Nobody waits or sits: the tickets and their codes may have been forgotten, and
    -- their hashes gone with them.
    created(K_TICKETS)
    created(K_CODES)
end
local t = {st = 'waiting', n = name, j = now, sc = new_code(token)}
if identity ~= '' then
    t.id = identity
end
if (ARGV[9] or '') ~= '' then
    t.em, t.lg = ARGV[9], ARGV[10] or 'en'
end
if s.status == 'open' and not s.manual and waiting == 0 and seated < s.capacity then
    seat(token, t, now, lease + s.session, 'admitted')
else
    t.seq = redis.call('INCR', K_SEQ)
    if t.seq == 1 then
        created(K_SEQ)
    end
    t.k = waiting  -- people ahead, and line admissions so far: for the "ahead" statistic
    t.c = tonumber(redis.call('HGET', K_STATS, 'line:admitted')) or 0
    redis.call('ZADD', K_LINE, t.seq, token)
    redis.call('ZADD', K_CHECKIN, lease + s.dropout, token)
    if waiting == 0 then
        created(K_LINE)
        created(K_CHECKIN)
    end
    put_ticket(token, t)
end
record_gap('arrive', now)
count('joined', now)
if identity ~= '' then
    redis.call('HSET', K_IDENT, identity, token)
    created(K_IDENT)  -- one EXPIRE: cheaper than finding out whether the hash was empty
end
touch(now)
return reply('ok', token, t, s, now)
