--!include drop_draw_lib.lua
-- drop_start.lua: an admin's "start now" (or a join that found the start owed): the
-- draw held at once, as the sweep holds it at starts_at: one slice of it per call
-- (drop_draw_lib.lua); the caller calls again while any are left to place (a call
-- after the start was begun carries it on). Once drawn, a call does nothing.
-- KEYS: the room's sixteen (room_lib.lua), then the drop's four (drop_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 a fresh nonce
--       (32 random bytes, hex) should the seed not be made yet, 5 who starts it, 6 the
--       most of the pre-queue one call takes ('' = 1000), 7 the call's time budget for
--       placing, in microseconds ('' = 5000)
-- Reply: {code, started (1: this call began the start, 0: it carried on one under way,
--   -1: the draw was held already), how many are placed so far, more (1: some are left
--   to place: call again)}; code ok | no_room | waitlist
local now = clock(ARGV[1])
slice_spent()
local s, lease = live_room(now)
if not s then
    return {'no_room', -1, 0, 0}
elseif s.waitlist then
    return {'waitlist', -1, 0, 0}
end
ACTOR = ARGV[5] ~= '' and ARGV[5] or ACTOR
local d = drop_schedule()
local began, placed, more = drop_start(now, lease, s, ARGV[4], d.starts_at,
    tonumber(ARGV[6]) or 1000, tonumber(ARGV[7]) or 5000)
touch(now)
if began == nil then
    return {'ok', -1, tonumber(redis.call('HGET', K_DROP, 'entries')) or 0, 0}
end
return {'ok', began and 1 or 0, placed, more and 1 or 0}
