--!include waitlist_lib.lua
-- waitlist_sweep.lua: the background sweep's turn at a waitlist room. The schedule lets
-- the next admit_batch confirmed entries in once per period of admit_every_minutes
-- (the period is kept, so any number of sweeping processes admit once per period); not
-- while the room is paused or closed, nor before a lottery's draw. Says whether the
-- draw is due (draw_at passed) or under way, for the caller to hold or finish it.
-- KEYS: the room's fifteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now ('' = Redis TIME)
-- Reply: {how many were admitted, the draw's business: '' | start | rank}
use_waitlist_keys(16)
local now = clock(ARGV[1])
local s = load_settings()
if not s or not s.waitlist then
    return {0, ''}
end
local w = load_waitlist(s)
local draw = ''
if w.ordering == 'lottery' then
    if w.state == 'ranking' then
        draw = 'rank'
    elseif w.state == 'committed' and w.draw_at and now >= w.draw_at then
        draw = 'start'
    end
end
local admitted = 0
if w.every and s.status == 'open' and (w.ordering ~= 'lottery' or w.state == 'drawn') then
    local period = math.floor(now / (w.every * 60))
    local last = tonumber(redis.call('HGET', W.meta, 'period'))
    if not last or period > last then
        redis.call('HSET', W.meta, 'period', period)
        ACTOR = 'schedule'
        admitted = #admit_from_ready(w.batch, now, 'schedule')
        touch_waitlist()
    end
end
return {admitted, draw}
