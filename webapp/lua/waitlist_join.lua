--!include waitlist_lib.lua
-- waitlist_join.lua: someone signs up to a waitlist room with a name, an email and
-- perhaps a referral code. The same email key again gets the same entry back; it may
-- then bring a referral code if the entry has none yet and is not yet confirmed.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 a fresh entry id, 5 display name, 6 email (as mailed), 7 email key
--       (one per mailbox), 8 referral code ('' = none), 9 hashed address
--       ('' = unknown), 10 hashed network (/24, /56), 11 hashed device id ('' = none),
--       12 the joiner's language (en, de, es; '' = en), for its emails
-- A new entry gets its confirmation email (outbox: confirm) from this script; an
-- unconfirmed one that signs up again, another (field nth), within limits.
-- Reply: entry_reply() of waitlist_lib.lua; code ok | no_room | not_waitlist | closed |
--   full | taken
local CONFIRM_SENDS = 3   -- confirmation emails per entry, at most
local CONFIRM_GAP = 3600  -- seconds between two of them, at least
use_waitlist_keys(17)
local now, id, code = clock(ARGV[1]), ARGV[4], ARGV[8]
local s = load_settings()
if not s then
    return entry_reply('no_room', '', nil, nil, nil, now)
end
if not s.waitlist then
    return entry_reply('not_waitlist', '', nil, s, nil, now)
end
local w = load_waitlist()

local existing = redis.call('HGET', W.emails, ARGV[7])
local known = existing and get_entry(existing)
if known then
    local changed = false
    if code ~= '' and not known.by and not known.ok and known.st == 'waiting' then
        refer(existing, known, code)
        changed = known.by ~= nil
    end
    -- Not confirmed yet (the link lost or expired): another confirmation email, at most
    -- CONFIRM_SENDS in all and one per CONFIRM_GAP, so nobody can flood a mailbox
    local sent = known.cn or 1
    if not known.ok and known.st == 'waiting' and sent < CONFIRM_SENDS
            and now - (known.cl or known.j) >= CONFIRM_GAP then
        known.cn, known.cl, changed = sent + 1, now, true
        notify('confirm', existing, known, now, 'nth', tostring(sent + 1))
    end
    if changed then
        put_entry(existing, known)
    end
    return entry_reply('ok', existing, known, s, w, now)
end

if s.status == 'closed' then
    return entry_reply('closed', '', nil, s, w, now)
end
if s.max_line and redis.call('ZCARD', W.line) >= s.max_line then
    return entry_reply('full', '', nil, s, w, now)
end
if (tonumber(redis.call('GET', W.seq)) or 0) >= MAX_SEQ then
    return entry_reply('full', '', nil, s, w, now)
end
if redis.call('HEXISTS', W.entries, id) == 1 then
    return entry_reply('taken', '', nil, s, w, now)
end
local rc = new_referral_code(id)
if not rc then
    return entry_reply('taken', '', nil, s, w, now)
end

local e = {n = ARGV[5], em = ARGV[6], ek = ARGV[7], rc = rc, ok = false, p = 0,
    seq = redis.call('INCR', W.seq), j = now, st = 'waiting', rf = {c = 0, h = 0, p = 0}}
if ARGV[9] ~= '' then
    e.ip, e.ac = ARGV[9], redis.call('HINCRBY', W.addresses, ARGV[9], 1)
end
if ARGV[10] ~= '' then
    e.net = ARGV[10]
end
if ARGV[11] ~= '' then
    e.dev = ARGV[11]
end
if (ARGV[12] or '') ~= '' then
    e.lg = ARGV[12]
end
refer(id, e, code)
redis.call('ZADD', W.line, order_score(w, e), id)
redis.call('HSET', W.emails, ARGV[7], id)
put_entry(id, e)
notify('confirm', id, e, now)
count('joined', now)
touch_waitlist()
return entry_reply('ok', id, e, s, w, now)
