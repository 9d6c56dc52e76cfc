--!keys settings seq line checkin seats tickets identities ended stats clock
--!keys audit codes history predictions accuracy outbox
-- room_base.lua: what every room script stands on: the room's keys, its settings, its
-- tickets, the clock, the audit log, and the TTL bookkeeping of keys a script creates.
-- Included (through room_lib.lua) by every script about a room; never run alone.
--
-- ARGV of every script that includes it: 1 now ('' = Redis TIME), 2 the sweep interval
-- in seconds ('' = no sweep runs), 3 the upkeep batch size (the most of each kind of
-- item one upkeep handles); a script's own arguments follow from ARGV[4].
--
-- KEYS, by name (every room script takes these sixteen, all with the room's hash tag):
--   settings     hash   capacity, dropout_seconds, grace_seconds, session_seconds,
--                       max_wait_seconds, max_line_length, status, admission_mode,
--                       version, notice, notice_at, born (when the room was made),
--                       max_checkin_seconds, queueing_method
--   seq          string the line's sequence: one number per joiner, never reused
--   line         zset   waiting ticket -> sequence number (the order of the line)
--   checkin      zset   waiting ticket -> time it drops out unless it checks in
--   seats        zset   seated ticket  -> time the seat is given up unless renewed
--   tickets      hash   ticket -> JSON {st, why, id, n, sc, seq, j, a, e, sock, k, c,
--                       em, lg: the email told when a seat is offered, its language;
--                       w: the check-in window last granted (room_windows.lua)}
--   identities   hash   identity -> its live ticket (one person, one place)
--   ended        zset   ended ticket -> time it ended (remembered RETAIN seconds)
--   stats        hash   time-decayed statistics: "<event>" = "n s q t" (record()), and
--                       counters: "count:<what>", "waits:*", "line:admitted", "free:from",
--                       "line:emails" (how many in line gave an email: count_emailed())
--   clock        hash   the lease clock: seen (latest script run), skipped (seconds);
--                       renewed (when every key's TTL was last renewed, see touch());
--                       pace (the check-in windows' hint, room_windows.lua); placing
--                       (while a drop's start places its pre-queue: PLACING below)
--   audit        stream admin actions and admissions: kind, who, code, name, detail
--   codes        hash   support code -> ticket
--   history      hash   "<minute>:<figure>" -> count (joined, admitted, ended_<why>)
--                       or sample (w: waiting, s: seats), a day of minutes kept
--   predictions  hash   waiting ticket -> "wait,low,high[,model wait,sd]" predicted at its join
--   accuracy     stream predicted against actual wait of each admission from the line
--   outbox       stream notices for the mailer (webapp/workers/mailer.py). A live room writes
--                       kind offered (a seat offered to a ticket that gave an email: em,
--                       lg on its record): entry (the token), email, name, lang, at,
--                       until (the offer's deadline); capped, TTL as a runtime key. A
--                       waitlist room's outbox is the same key (waitlist_lib.lua).


local BATCH = tonumber(ARGV[3])  -- the upkeep batch size, ARGV[3] of every script

local RETAIN = 3600        -- seconds an ended ticket is remembered (410, not 404)
local IDLE_TTL = 172800    -- seconds: an untouched room's runtime keys expire (a bound)
local STATS_TTL = 2592000  -- seconds: an untouched room's statistics expire
local RENEW_EVERY = 3600   -- seconds between renewals of every key's TTL (touch())
local SEEN_EVERY = 0.25    -- seconds: how often "seen" is written (its precision)
local AUDIT_MAX = 10000    -- entries an audit stream keeps (about)
local ACCURACY_MAX = 5000  -- admissions whose prediction is kept, for the panel (about)
local OUTBOX_MAX = 10000   -- notices a live room's outbox keeps (about; the mailer reads it)

-- Who acts: 'engine' unless a script acts for an admin (it sets ACTOR from its ARGV).
local ACTOR = 'engine'

-- A drop's start places its pre-queue a slice per call (drop_draw_lib.lua), at line
-- numbers it reserved below everyone else's. While it does, PLACING is the last of
-- those numbers (the clock hash's "placing", read by lease_clock()): a ticket numbered
-- after it has the not-yet-placed pre-queue ahead of it too (room_lib.lua ahead_of()),
-- and is offered no seat before them. nil: no start under way.
local PLACING = nil

-- Microseconds since this call's slice of a long walk began (Redis TIME: the work's
-- own clock, whatever `now` the caller gave). The first call starts the clock: a
-- drop's scripts start it first thing, so their budget counts the upkeep too.
local SLICE_FROM = nil
local function slice_spent()
    local t = redis.call('TIME')
    local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
    SLICE_FROM = SLICE_FROM or us
    return us - SLICE_FROM
end

-- Microseconds of one call's time its offers of free seats may take (room_lib.lua
-- promote(), pass_through()): an offer costs tens of µs (the ticket, the seats, the
-- audit, the event), so a batch of BATCH could hold Redis 10 to 15 ms on its own,
-- on top of the call's own work (a drop's start: bench/drop_start.py). What is left
-- is offered by the next call's upkeep, or the sweep's, at once.
local OFFERS_US = 4000

-- Whether a call goes on to its offer number n (from 0): the clock looked at every 8
-- (the first look starts it, if nothing did), and no more once OFFERS_US are spent.
local function offers_go_on(n)
    if n % 8 ~= 0 then
        return true
    end
    return slice_spent() < OFFERS_US or n == 0
end

-- How many of the pre-queue a start under way has still to place: waiting (in
-- checkin) but not in the line.
local function unplaced()
    return math.max(redis.call('ZCARD', K_CHECKIN) - redis.call('ZCARD', K_LINE), 0)
end

-- How many wait in line, the pre-queue a start is placing included.
local function line_length()
    local n = redis.call('ZCARD', K_LINE)
    return PLACING and n + unplaced() or n
end

-- The people ahead of a ticket in line (nil: not in it, as a pre-queued ticket): its
-- rank, and while a start places the pre-queue, everyone it has still to place if the
-- ticket is numbered after them.
local function ahead_of(token)
    local rank = redis.call('ZRANK', K_LINE, token)
    if rank and PLACING and tonumber(redis.call('ZSCORE', K_LINE, token)) > PLACING then
        rank = rank + unplaced()
    end
    return rank
end

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

local function clock(arg)
    if arg ~= nil and arg ~= '' then
        return tonumber(arg)
    end
    local t = redis.call('TIME')
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- The settings the room scripts read (a room's hash also holds its title, description
-- and other words for people, which no script needs, and a waitlist's own settings,
-- which waitlist_lib.lua reads): one HMGET of fourteen fields, cheaper than HGETALL (or
-- more fields) on every check-in.
local function load_settings()
    local v = redis.call('HMGET', K_SETTINGS, 'capacity', 'dropout_seconds', 'grace_seconds',
        'session_seconds', 'max_line_length', 'status', 'admission_mode', 'version', 'notice',
        'kind', 'admit_per_minute', 'max_checkin_seconds', 'email_claim_seconds',
        'queueing_method')
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
        per_minute = tonumber(v[11]),  -- most admissions in a clock minute (nil: no limit)
        max_checkin = tonumber(v[12]) or 300,  -- the longest check-in window far back
        email_claim = tonumber(v[13]) or 180,  -- an offer to someone who gave an email
        -- who a free seat goes to (room_lib.lua promote()): fifo, random, passthrough,
        -- reject (fifo for those in line; new joins refused)
        method = v[14] or 'fifo',
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

-- One entry of the room's audit log. `t` may be nil (an action on the room itself).
local function audit(now, kind, t, detail)
    local code, name, uid = '', '', ''
    if t then
        code, name = t.sc or '', t.n or ''
        if t.id and string.sub(t.id, 1, 4) == 'sub:' then  -- a site's customer (identity.py)
            uid = string.sub(t.id, 5)
        end
    end
    redis.call('XADD', K_AUDIT, 'MAXLEN', '~', AUDIT_MAX, '*', 'at', tostring(now),
        'kind', kind, 'who', ACTOR, 'code', code, 'name', name, 'detail', detail or '',
        'uid', uid)
    created(K_AUDIT)
end
