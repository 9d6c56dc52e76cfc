--!include drop_draw_lib.lua
-- drop_start.lua: an admin's "start now" (or a join that found the start owed): the
-- draw held at once, as the sweep holds it at starts_at. A second call does nothing.
-- KEYS: the room's sixteen (room_lib.lua), then the drop's four (drop_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 a fresh nonce
--       (32 random bytes, hex) should the seed not be made yet, 5 who starts it
-- Reply: {code, how many were drawn (-1: held already)}; code ok | no_room | waitlist
local now = clock(ARGV[1])
local s, lease = live_room(now)
if not s then
    return {'no_room', -1}
elseif s.waitlist then
    return {'waitlist', -1}
end
ACTOR = ARGV[5] ~= '' and ARGV[5] or ACTOR
local d = drop_schedule()
local drawn = drop_start(now, lease, s, ARGV[4], d.starts_at)
touch(now)
return {'ok', drawn}
