--!include waitlist_lib.lua
-- waitlist_join.lua: someone signs up to a waitlist room with a name, an email and
-- perhaps a referral code. The same email key again gets the same entry back only from
-- the device that made it (its device hash; none = none); from any other its owner is mailed
-- their link instead (outbox: link) and the reply names no entry. A referral code never
-- attaches to an existing entry.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 a fresh entry id, 5 display name, 6 email (as mailed), 7 email key
--       (one per mailbox), 8 referral code ('' = none), 9 hashed address
--       ('' = unknown), 10 hashed network (/24, /56), 11 hashed device id ('' = none),
--       12 the joiner's language (one of webapp.web.i18n.LANGUAGES; '' = en), for its emails
-- A new entry gets its confirmation email (outbox: confirm) from this script; an
-- unconfirmed one that signs up again, another (field nth), within limits.
-- Reply: entry_reply() of waitlist_lib.lua; code ok | no_room | not_waitlist | closed |
--   full | taken; then one more field, the email this join queued: '' | confirm | link
--   (a known address from another browser: the id and the entry's figures are blank)
local CONFIRM_SENDS = 3   -- confirmation emails per entry, at most
local CONFIRM_GAP = 3600  -- seconds between two of them, at least
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
    if (known.dev or '') ~= ARGV[11] then
        -- Someone who knows the address, perhaps not its owner: the owner is told
        known.ln = (known.ln or 0) + 1
        put_entry(existing, known)
        notify('link', existing, known, now, 'nth', tostring(known.ln))
        local blank = entry_reply('ok', '', nil, s, w, now)
        blank[#blank + 1] = 'link'
        return blank
    end
    -- Not confirmed yet (the link lost or expired): another confirmation email, at most
    -- CONFIRM_SENDS in all and one per CONFIRM_GAP, so nobody can flood a mailbox
    local sent, mailed = known.cn or 1, ''
    if not known.ok and known.st == 'waiting' and sent < CONFIRM_SENDS
            and now - (known.cl or known.j) >= CONFIRM_GAP then
        known.cn, known.cl, mailed = sent + 1, now, 'confirm'
        notify('confirm', existing, known, now, 'nth', tostring(sent + 1))
        put_entry(existing, known)
    end
    local again = entry_reply('ok', existing, known, s, w, now)
    again[#again + 1] = mailed
    return again
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
local reply = entry_reply('ok', id, e, s, w, now)
reply[#reply + 1] = 'confirm'
return reply
