--!include waitlist_lib.lua
-- waitlist_draw.lua: holds a lottery waitlist's draw (an admin, or the sweep at
-- draw_at). It reveals the committed seed and fixes who takes part: everyone waiting
-- now. The caller then ranks them (waitlist_rank.lua: HMAC-SHA256 needs Python); until
-- that is done nobody is admitted, and later joiners already go to the back.
-- Idempotent: while ranking or once drawn it only answers the draw's state and seed.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 who draws
-- Reply: {code, state, seed, commitment}; code ok | no_room | not_waitlist | not_lottery
local now = clock(ARGV[1])
ACTOR = ARGV[4]
local s = load_settings()
if not s then
    return {'no_room', '', '', ''}
elseif not s.waitlist then
    return {'not_waitlist', '', '', ''}
end
local w = load_waitlist()
local m = redis.call('HMGET', W.meta, 'seed', 'commitment')
if w.ordering ~= 'lottery' or not m[1] then
    return {'not_lottery', w.state, '', ''}
end
local state = w.state
if state == 'committed' then
    redis.call('HSET', W.meta, 'state', 'ranking', 'started_at', tostring(now))
    audit(now, 'draw', nil, 'started; seed ' .. m[1])
    state = finish_draw_if_ranked(now)
    touch_waitlist()
end
return {'ok', state, m[1], m[2]}
