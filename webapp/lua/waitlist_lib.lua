--!include room_lib.lua
--!include codes_lib.lua
--!keys wl_entries wl_line wl_ready wl_seq wl_emails wl_codes wl_admitted wl_held
--!keys wl_addresses wl_meta wl_drawn wl_unclaimed wl_referees
-- waitlist_lib.lua: the rules of waitlist rooms (setting kind = waitlist), shared by the
-- waitlist_*.lua scripts, room_admit.lua and room_configure.lua. The loader puts
-- room_lib.lua in front of it; it is never run alone.
--
-- A waitlist room keeps its entries in keys of its own (keys.py WaitlistKeys), by name
-- beside the room's (wl_<name>), in the table W (W.entries is K_WL_ENTRIES; its outbox
-- is the room's, K_OUTBOX):
--   entries      hash   entry id -> JSON {n name, em email, ek email key, rc referral
--                        code, by referrer, ok confirmed, p points, seq, j joined,
--                        st waiting|admitted|lapsed, a admitted at, l lapsed at, ip/net/
--                        dev hashes, ac nth entry of its address, lg language, cn
--                        confirmation emails sent (if more than one) and cl the last's
--                        time, ec address corrections (waitlist_resend.lua), nn told
--                        it is nearly in (when), rs its referral leg:
--                        pending|credited|held|void, rw why held or void, rp points its leg gave,
--                        rf {c credited, h held, p pending} as a referrer, vt credit times}
--   line            zset   waiting entry -> order score (everyone waiting: the position)
--   ready          zset   confirmed waiting entry -> the same score (admission takes these)
--   seq              string join order
--   emails        hash   email key -> entry id
--   codes          hash   referral code -> entry id
--   admitted    zset   admitted entry -> time admitted
--   held            zset   referee whose boost waits for an admin's review -> time held
--   addresses  hash   address hash -> entries joined from it
--   meta            hash   the draw: commitment, seed, state (committed|ranking|drawn),
--                        committed_at, started_at, finished_at, count; period (schedule)
--   drawn          list   the draw's entries (its participants), for anyone to verify it
--   outbox        stream one message per notice: kind (confirm | admitted | lapsed |
--                        near), entry, email, name, lang, at; until (admitted: the claim
--                        deadline); nth (confirm: the 2nd or 3rd, sent on signing up again)
--   unclaimed  zset   admitted entry not yet claimed -> its claim deadline (the sweep
--                        lapses those past it, oldest first)
--   referees    zset   every score 0: 'referrer id:referee id' (entry ids have no
--                        ':'), so a referrer's referees are one ZRANGEBYLEX (the panel)
--
-- Order scores, one sorted-set score per entry, always an integer below 2^53 in size
-- (exact in a double, so never rounded, never tied; tests/domain/test_waitlist.py):
--   fifo                 seq                      (seq < 2^32)
--   priority             seq - points * 2^32      (points <= 1,000,000 < 2^21)
--   lottery, undrawn     as it was when it joined (below 2^32)
--   lottery, drawn       2^32 + the first 52 bits of HMAC-SHA256(seed, entry id)
--   lottery, after draw  2^52 + 2^33 + seq        (the back, in join order)
-- Numbers reach Redis exactly: redis.call writes a Lua number with 17 digits (never
-- concatenate one into a string: that keeps 14).

local W = {
    entries = K_WL_ENTRIES, line = K_WL_LINE, ready = K_WL_READY, seq = K_WL_SEQ,
    emails = K_WL_EMAILS, codes = K_WL_CODES, admitted = K_WL_ADMITTED, held = K_WL_HELD,
    addresses = K_WL_ADDRESSES, meta = K_WL_META, drawn = K_WL_DRAWN, outbox = K_OUTBOX,
    unclaimed = K_WL_UNCLAIMED, referees = K_WL_REFEREES,
}

local TWO32 = 4294967296
local MAX_SEQ = TWO32 - 1
local DRAWN = TWO32                              -- drawn entries: DRAWN + rank
local LATE = 4503599627370496 + 2 * TWO32        -- joined after the draw: LATE + seq
local DRAWN_BELOW = '(' .. DRAWN                 -- 10 digits: safe to concatenate
local HOUR = 3600
local LOOP_DEPTH = 64   -- referral links followed looking for a loop (deeper: none found)

-- The waitlist's own settings (the room's hash: fields load_settings does not read) and
-- its draw's state.
local function load_waitlist()
    local v = redis.call('HMGET', K_SETTINGS, 'ordering', 'referral_boost', 'referral_cap',
        'referral_velocity', 'entries_per_address', 'admit_every_minutes', 'admit_batch',
        'draw_at', 'claim_seconds', 'notify_near')
    return {
        ordering = v[1] or 'fifo',
        boost = tonumber(v[2]) or 100,
        cap = tonumber(v[3]) or 500,
        velocity = tonumber(v[4]) or 10,
        per_address = tonumber(v[5]) or 3,
        every = tonumber(v[6]),  -- nil: no schedule
        batch = tonumber(v[7]) or 100,
        draw_at = tonumber(v[8]),  -- nil: only an admin draws
        claim = tonumber(v[9]) or 172800,
        near = tonumber(v[10]),  -- nil: no "nearly in" email
        state = redis.call('HGET', W.meta, 'state') or '',
    }
end

local function get_entry(id)
    local raw = redis.call('HGET', W.entries, id)
    return raw and cjson.decode(raw)
end

local function put_entry(id, e)
    redis.call('HSET', W.entries, id, cjson.encode(e))
end

-- The audit log names an entry by its referral code (its support code too).
local function named(e)
    return {sc = e.rc, n = e.n}
end

local function order_score(w, e)
    if w.ordering == 'priority' then
        return e.seq - (e.p or 0) * TWO32
    elseif w.ordering == 'lottery' and (w.state == 'ranking' or w.state == 'drawn') then
        return LATE + e.seq
    end
    return e.seq
end

-- After a change of points: the entry's place, in both sorted sets it is in (XX: a set
-- it is not in stays without it).
local function reposition(id, e, w)
    if w.ordering == 'priority' and e.st == 'waiting' then
        local score = order_score(w, e)
        redis.call('ZADD', W.line, 'XX', score, id)
        redis.call('ZADD', W.ready, 'XX', score, id)
    end
end

-- A short code naming an entry: shared as a referral code, told to support. 8 of
-- Crockford's base-32 characters (40 bits) from the entry id's hash; another on a clash.
local function new_referral_code(id)
    return unique_code(W.codes, id, ':rc:', 8, 20)
end

local function counts(e)
    e.rf = e.rf or {}
    e.rf.c, e.rf.h, e.rf.p = e.rf.c or 0, e.rf.h or 0, e.rf.p or 0
    return e.rf
end

-- Links the entry `e` (id) to the referrer whose code it brought, if that is another
-- entry: its leg is pending until it confirms its email.
local function refer(id, e, code)
    if code == '' then
        return
    end
    local r_id = redis.call('HGET', W.codes, code)
    local r = r_id and r_id ~= id and get_entry(r_id)
    if not r then
        return
    end
    e.by, e.rs = r_id, 'pending'
    redis.call('ZADD', W.referees, 0, r_id .. ':' .. id)
    local rf = counts(r)
    rf.p = rf.p + 1
    put_entry(r_id, r)
end

-- The referrer's credit times within the last hour (the velocity window).
local function recent_credits(r, now)
    local kept = {}
    for _, at in ipairs(r.vt or {}) do
        if at > now - HOUR then
            kept[#kept + 1] = at
        end
    end
    return kept
end

-- Does following referral links up from the referrer come back to the referee? Then
-- the referee's leg closes a loop (A refers B refers A, or longer).
local function loops_back(x_id, r_id, r)
    local at, e = r_id, r
    for _ = 1, LOOP_DEPTH do
        if at == x_id then
            return true
        end
        if not e or not e.by then
            return false
        end
        at = e.by
        e = get_entry(at)
    end
    return false
end

-- Credits the referee x's boost to its referrer r, up to the cap; saves r (the caller
-- saves x). `how` ends the audit detail.
local function credit(x_id, x, r_id, r, w, now, how)
    local add = math.max(math.min(w.boost, w.cap - (r.p or 0)), 0)
    r.p = (r.p or 0) + add
    local rf = counts(r)
    rf.c = rf.c + 1
    local recent = recent_credits(r, now)
    recent[#recent + 1] = now
    r.vt = recent
    x.rs, x.rw, x.rp = 'credited', nil, add
    put_entry(r_id, r)
    if add > 0 then
        reposition(r_id, r, w)
    end
    audit(now, 'referral_credit', named(r), 'from ' .. x.rc .. ': +' .. add .. ', score '
        .. r.p .. how)
end

-- The referee x (id x_id) has confirmed its email: its leg is judged once, now. A loop
-- leg is void; a leg from the referrer's network or device, from an address with too
-- many entries, or past the referrer's hourly limit is held for an admin; any other is
-- credited. Every outcome is audited. Saves the referrer (the caller saves x).
local function judge_referral(x_id, x, w, now)
    local r_id = x.by
    local r = r_id and get_entry(r_id)
    if not r then
        x.rs, x.rw = 'void', 'gone'
        return
    end
    local rf = counts(r)
    rf.p = math.max(rf.p - 1, 0)
    if loops_back(x_id, r_id, r) then
        x.rs, x.rw = 'void', 'loop'
        put_entry(r_id, r)
        audit(now, 'referral_void', named(r), 'from ' .. x.rc .. ': loop')
        return
    end
    local why
    if x.net and x.net == r.net then
        why = 'network'
    elseif x.dev and x.dev == r.dev then
        why = 'device'
    elseif (x.ac or 0) > w.per_address then
        why = 'address'
    elseif #recent_credits(r, now) >= w.velocity then
        why = 'velocity'
    end
    if why then
        x.rs, x.rw = 'held', why
        rf.h = rf.h + 1
        redis.call('ZADD', W.held, now, x_id)
        put_entry(r_id, r)
        audit(now, 'referral_hold', named(r), 'from ' .. x.rc .. ': held (' .. why .. ')')
        return
    end
    credit(x_id, x, r_id, r, w, now, '')
end

-- A message in the outbox for the mailer (one per entry and kind is ever sent: the
-- mailer's idempotency key), written by the script that makes the change it tells of.
local function notify(kind, id, e, now, ...)
    redis.call('XADD', W.outbox, '*', 'kind', kind, 'entry', id, 'email', e.em,
        'name', e.n or '', 'lang', e.lg or 'en', 'at', tostring(now), ...)
end

-- Admits one waiting, confirmed entry: out of the line, into the admitted set with its
-- claim deadline, and a message in the outbox in the same script, so none is missed.
local function admit_entry(id, e, w, now, how)
    local deadline = now + w.claim
    redis.call('ZREM', W.line, id)
    redis.call('ZREM', W.ready, id)
    redis.call('ZADD', W.admitted, now, id)
    redis.call('ZADD', W.unclaimed, deadline, id)
    e.st, e.a = 'admitted', now
    put_entry(id, e)
    notify('admitted', id, e, now, 'until', tostring(deadline))
    emit('waitlist.admitted', now, id, nil, {how = how})
    count('admitted', now)
    audit(now, 'admit', named(e), how)
end

-- Admits the first `wanted` confirmed entries in order (unconfirmed ones keep their
-- place and are skipped: they are not in `ready`). Returns their ids.
local function admit_from_ready(w, wanted, now, how)
    local admitted = {}
    if wanted <= 0 then
        return admitted
    end
    for _, id in ipairs(redis.call('ZRANGE', W.ready, 0, wanted - 1)) do
        local e = get_entry(id)
        if e and e.st == 'waiting' and e.ok then
            admit_entry(id, e, w, now, how)
            admitted[#admitted + 1] = id
        else
            redis.call('ZREM', W.ready, id)
        end
    end
    return admitted
end

-- A fresh lottery: a new secret seed and its published SHA-256 (both from the caller:
-- Lua has neither a safe random source nor SHA-256). Forgets an earlier draw.
local function commit_draw(now, seed, commitment)
    redis.call('DEL', W.drawn)
    redis.call('HDEL', W.meta, 'started_at', 'finished_at', 'count')
    redis.call('HSET', W.meta, 'seed', seed, 'commitment', commitment, 'state', 'committed',
        'committed_at', tostring(now))
    audit(now, 'draw_commit', nil, commitment)
end

-- Ends the draw once no participant is left unranked.
local function finish_draw_if_ranked(now)
    if redis.call('ZCOUNT', W.line, '-inf', DRAWN_BELOW) > 0 then
        return 'ranking'
    end
    local n = redis.call('LLEN', W.drawn)
    redis.call('HSET', W.meta, 'state', 'drawn', 'finished_at', tostring(now), 'count', n)
    audit(now, 'draw', nil, n .. ' entries drawn; seed ' .. (redis.call('HGET', W.meta, 'seed') or ''))
    return 'drawn'
end

-- Why a change of kind or ordering cannot be made now (nil: it can). A room changes kind
-- only while it is empty; a waitlist's order is rebuilt by nobody, so it changes only
-- while nobody waits on it, except to lottery (the draw will order everyone) while no
-- draw is under way.
local function change_refusal(old_kind, new_kind, old_ordering, new_ordering, state)
    local waiting = redis.call('ZCARD', W.line)
    if new_kind ~= old_kind and (waiting > 0 or redis.call('ZCARD', K_LINE) > 0
            or redis.call('ZCARD', K_SEATS) > 0) then
        return 'the kind of a room changes only while nobody waits or holds a seat in it'
    end
    if new_ordering ~= old_ordering and waiting > 0 then
        if new_ordering ~= 'lottery' then
            return 'the order of a waitlist changes only while nobody waits on it (or to lottery)'
        elseif state == 'ranking' then
            return 'a draw is under way'
        end
    end
    return nil
end

-- Renews the TTLs of the room keys a waitlist script writes to (its own keys have none).
local function touch_waitlist()
    for _, key in ipairs({K_STATS, K_AUDIT, K_HISTORY}) do
        redis.call('EXPIRE', key, STATS_TTL)
    end
end

-- Every waitlist script about one entry replies with this: the fields of room_lib's
-- reply(), then confirmed (0/1), score, referrals credited, held and pending, the
-- ordering and the draw's state. Position 0 while waiting: not known until the draw.
local function entry_reply(code, id, e, s, w, now)
    local state, name, position, rc, confirmed, score = '', '', 0, '', 0, 0
    local rf = {}
    if e then
        state, name, rc, score, rf = e.st, e.n or '', e.rc or '', e.p or 0, counts(e)
        confirmed = e.ok and 1 or 0
        if state == 'waiting' then
            local known = true
            if w.ordering == 'lottery' and w.state ~= 'drawn' then
                local at = tonumber(redis.call('ZSCORE', W.line, id))
                known = at ~= nil and at >= LATE
            end
            if known then
                position = (redis.call('ZRANK', W.line, id) or -1) + 1
            end
        end
    end
    local capacity, status, version, notice, ordering, draw = 0, '', 0, '', '', ''
    if s then
        capacity, status, version, notice = s.capacity, s.status, s.version, s.notice
    end
    if w then
        ordering, draw = w.ordering, w.state
    end
    local waiting, admitted = 0, 0
    if W.line then
        waiting, admitted = redis.call('ZCARD', W.line), redis.call('ZCARD', W.admitted)
    end
    return {code, id or '', state, position, waiting, admitted, capacity, status,
        tostring(now), '', name, version, notice, rc, confirmed, score, rf.c or 0, rf.h or 0,
        rf.p or 0, ordering, draw}
end

-- The start of every waitlist script about one entry: the room (a waitlist), its
-- settings, the entry. Returns s, w, e, id, nil; or nil, nil, nil, nil and the reply to
-- return now (no_room, not_waitlist, unknown).
local function waitlist_entry(now, id)
    local s = load_settings()
    if not s then
        return nil, nil, nil, nil, entry_reply('no_room', id, nil, nil, nil, now)
    end
    if not s.waitlist then
        return nil, nil, nil, nil, entry_reply('not_waitlist', id, nil, s, nil, now)
    end
    local w = load_waitlist()
    local e = get_entry(id)
    if not e then
        return nil, nil, nil, nil, entry_reply('unknown', id, nil, s, w, now)
    end
    return s, w, e, id, nil
end
