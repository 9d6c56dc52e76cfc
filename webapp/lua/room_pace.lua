--!keys clock
-- room_pace.lua: keeps the hint the check-in windows are granted from
-- (room_windows.lua; worked out by webapp/domain/windows.py, written by the sweep).
-- Only in a room whose clock exists (a live room some script has run in): a deleted
-- room gets no key back, and the field lives and expires with the clock hash.
-- KEYS: clock, the room's clock hash
-- ARGV: 1 the hint "a b c until" ('' = none: every window is dropout_seconds)
-- Reply: 1 if kept, 0 if the room has no clock
if redis.call('EXISTS', K_CLOCK) == 0 then
    return 0
end
if ARGV[1] == '' then
    redis.call('HDEL', K_CLOCK, 'pace')
else
    redis.call('HSET', K_CLOCK, 'pace', ARGV[1])
end
return 1
