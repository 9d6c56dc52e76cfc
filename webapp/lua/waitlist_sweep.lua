--!include waitlist_lib.lua
-- waitlist_sweep.lua: the background sweep's turn at a waitlist room, three bounded
-- steps:
-- 1. Lapses: admitted entries whose claim deadline has passed unclaimed, oldest deadline
--    first, at most LAPSE_BATCH a turn. Each is told (outbox: lapsed), and the next
--    confirmed entry in line is admitted in its place (outbox: admitted), unless the
--    room is closed or a lottery is not drawn.
-- 2. The schedule lets the next admit_batch confirmed entries in once per period of
--    admit_every_minutes (the period is kept, so any number of sweeping processes admit
--    once per period); not while the room is paused or closed, nor before a lottery's
--    draw.
-- 3. "Nearly in": with notify_near set, the confirmed entries in the top notify_near
--    places not yet told get an outbox message (near), once per entry. At most
--    NEAR_BATCH places are looked at a turn, from a cursor kept in meta (near_at), so
--    a long top is covered over several turns.
-- Says whether the draw is due (draw_at passed) or under way, for the caller to hold or
-- finish it.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used)
-- Reply: {how many were admitted (schedule and replacements), the draw's business:
--   '' | start | rank, how many lapsed, how many were told they are nearly in}
local LAPSE_BATCH = 100
local NEAR_BATCH = 500
local now = clock(ARGV[1])
local s = load_settings()
if not s or not s.waitlist then
    return {0, '', 0, 0}
end
local w = load_waitlist()
local draw = ''
local ordered = w.ordering ~= 'lottery' or w.state == 'drawn'
if w.ordering == 'lottery' then
    if w.state == 'ranking' then
        draw = 'rank'
    elseif w.state == 'committed' and w.draw_at and now >= w.draw_at then
        draw = 'start'
    end
end
local admitted, lapsed, near, wrote = 0, 0, 0, false

ACTOR = 'schedule'
for _, id in ipairs(redis.call('ZRANGEBYSCORE', W.unclaimed, '-inf', now, 'LIMIT', 0,
        LAPSE_BATCH)) do
    redis.call('ZREM', W.unclaimed, id)
    local e = get_entry(id)
    if e and e.st == 'admitted' then
        redis.call('ZREM', W.admitted, id)
        e.st, e.l = 'lapsed', now
        put_entry(id, e)
        notify('lapsed', id, e, now)
        count('lapsed', now)
        audit(now, 'lapse', named(e), 'not claimed in time')
        lapsed = lapsed + 1
        if ordered and s.status ~= 'closed' then
            admitted = admitted + #admit_from_ready(w, 1, now, 'in place of ' .. e.rc)
        end
    end
    wrote = true
end

if w.every and s.status == 'open' and ordered then
    local period = math.floor(now / (w.every * 60))
    local last = tonumber(redis.call('HGET', W.meta, 'period'))
    if not last or period > last then
        redis.call('HSET', W.meta, 'period', period)
        admitted = admitted + #admit_from_ready(w, w.batch, now, 'schedule')
        wrote = true
    end
end

if w.near and ordered then
    local from = tonumber(redis.call('HGET', W.meta, 'near_at')) or 0
    if from >= w.near then
        from = 0
    end
    local upto = math.min(from + NEAR_BATCH, w.near) - 1
    local ids = redis.call('ZRANGE', W.ready, from, upto)
    for _, id in ipairs(ids) do
        local e = get_entry(id)
        if e and e.st == 'waiting' and e.ok and not e.nn then
            e.nn = now
            put_entry(id, e)
            notify('near', id, e, now)
            near = near + 1
        end
    end
    local after = upto + 1
    if #ids < upto - from + 1 or after >= w.near then
        after = 0
    end
    if after ~= from then
        redis.call('HSET', W.meta, 'near_at', after)
    end
end

if wrote or near > 0 then
    touch_waitlist()
end
return {admitted, draw, lapsed, near}
