--!include room_lib.lua
-- room_sweep.lua: the background sweep's upkeep of one room (bounded per call).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua)
-- Reply: how many items were handled (-1 if the room does not exist); the caller
--   calls again while the answer is not 0.
local now = clock(ARGV[1])
local s, _, handled = live_room(now)
if not s then
    return -1
end
sample_history(now)
renew_created()
return handled
