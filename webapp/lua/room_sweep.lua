--!include room_lib.lua
-- room_sweep.lua: the background sweep's upkeep of one room (bounded per call).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 sweep interval ('' = none), 3 upkeep batch size
-- Reply: how many items were handled (-1 if the room does not exist); the caller
--   calls again while the answer is not 0.
local now = clock(ARGV[1])
local s = load_settings()
if not s then
    return -1
end
local handled = settle(now, lease_clock(now, ARGV[2]), tonumber(ARGV[3]), s)
sample_history(now)
renew_created()
return handled
