--!include room_lib.lua
--!include sha256_lib.lua
--!keys drop drop_prequeue
-- drop_lib.lua: a scheduled drop (webapp/domain/drops.py): the room's schedule
-- (prequeue_at, starts_at, ends_at), its pre-queue and its stock, as the join script
-- and the drop scripts read them. A pre-queue join is ranked by the draw at once, inside
-- Redis, with the seed committed when the start was scheduled (the rank is kept in the
-- pre-queue's sorted set, never answered), so the start only sorts and places: the
-- burst at the start costs Redis little (bench/drop_start.py). Included by the scripts
-- that need it; never run alone.
--
-- KEYS, by name, beside the room's (DropKeys in webapp/redis/keys.py):
--  drop          hash   the draw: state ('' | committed | placing | drawn), commitment,
--                      seed (kept here, read by the app only once drawn), committed_at,
--                      drawn_at, entries (placed so far), starts_at (of this draw); while
--                      placing: first (the first line number reserved), reserved (how
--                      many), c0 (line admissions at the start); stock: sold (all
--                      reported), admitted0 (the room's admissions when stock was first
--                      counted)
--  drop_prequeue zset   pre-queued ticket -> its draw rank (-1: joined before a seed was
--                      committed, ranked at the start); its ticket has pq = 1 and di (its
--                      draw id); it is in checkin, as every waiting ticket, not in the
--                      line. The start takes each out as it places it.
--  drop_drawn    list  (drop_draw_lib.lua)   the draw ids (public ids) in drawn order
--  drop_pool     set   (drop_draw_lib.lua)   scratch for the seed's randomness (deleted by the same script)
local DROP_TTL = 30 * 86400  -- seconds an untouched drop's record is kept

-- The schedule and the draw's state, from the settings hash and the drop's.
local function drop_schedule()
    local v = redis.call('HMGET', K_SETTINGS, 'prequeue_at', 'starts_at', 'ends_at',
        'ends_at_clears_line', 'stock')
    return {
        prequeue_at = tonumber(v[1]),
        starts_at = tonumber(v[2]),
        ends_at = tonumber(v[3]),
        clears = v[4] == '1',
        stock = tonumber(v[5]),  -- items left; nil: not tracked
        state = redis.call('HGET', K_DROP, 'state') or '',
    }
end

-- Where the room is in its schedule at `now`: before (nobody joins), prequeue (joins
-- go to the pre-queue), due (the start is owed: drop_start() begins before anyone else
-- joins), open (as a room without a schedule; a start placing its pre-queue is open:
-- a join goes behind everyone the start places), ended (no new joins). Sold out is
-- apart.
local function drop_phase(d, now)
    if d.ends_at and now >= d.ends_at then
        return 'ended'
    end
    if d.state == 'drawn' or d.state == 'placing' or not d.starts_at then
        return 'open'
    end
    if now >= d.starts_at then
        return 'due'
    end
    if d.prequeue_at and now >= d.prequeue_at then
        return 'prequeue'
    end
    return 'before'
end

local function sold_out(d)
    return d.stock ~= nil and d.stock <= 0
end

-- A ticket's draw id: its public id (webapp.domain.tickets.public_id).
local function draw_id_of(token)
    return string.sub(sha256_hex(token), 1, 12)
end

-- The committed seed's HMAC state, read once per call (nil: no seed committed yet).
local DRAW_KEY = false
local function draw_key()
    if DRAW_KEY == false then
        local v = redis.call('HMGET', K_DROP, 'state', 'seed', 'key')
        if v[1] ~= 'committed' or not v[2] then
            DRAW_KEY = nil
        elseif v[3] then
            DRAW_KEY = hmac_key_of_text(v[3])
        else
            DRAW_KEY = hmac_sha256_key(hex_bytes(v[2]))
        end
    end
    return DRAW_KEY
end

-- Puts a new ticket in the pre-queue: present like anyone waiting (checkin), with no
-- place in the line until the start, ranked by the draw now (drop_start() places it).
local function prequeue(token, t, now, lease, s)
    t.pq, t.di = 1, draw_id_of(token)
    local key = draw_key()
    redis.call('ZADD', K_CHECKIN, lease + s.dropout, token)
    redis.call('ZADD', K_DROP_PREQUEUE, key and draw_rank_of(key, t.di) or -1, token)
    created(K_CHECKIN)
    redis.call('EXPIRE', K_DROP_PREQUEUE, IDLE_TTL)
    put_ticket(token, t)
end

-- Ends up to `limit` waiting tickets (the line and the pre-queue) with reason `why`
-- (sold_out, event_ended), fewer once `budget` microseconds of this call are spent
-- (slice_spent(): the caller calls again while any are ended); a ticket that gave an
-- email is told by the outbox. Returns how many it ended.
local function end_waiting(now, why, limit, budget)
    local tokens = redis.call('ZRANGE', K_CHECKIN, 0, limit - 1)
    for i, token in ipairs(tokens) do
        local t = get_ticket(token)
        end_ticket(token, t, why, now)
        redis.call('ZREM', K_DROP_PREQUEUE, token)
        if t and t.em and t.em ~= '' then
            redis.call('XADD', K_OUTBOX, 'MAXLEN', '~', OUTBOX_MAX, '*', 'kind', why,
                'entry', token, 'email', t.em, 'name', t.n or '', 'lang', t.lg or 'en',
                'at', tostring(now))
            redis.call('EXPIRE', K_OUTBOX, IDLE_TTL)
        end
        if i % 8 == 0 and slice_spent() >= budget then
            return i
        end
    end
    return #tokens
end
