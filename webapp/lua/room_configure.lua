--!include room_lib.lua
-- room_configure.lua: creates a room or changes its settings, then applies them
-- (a larger capacity or a reopened room admits from the line at once).
-- KEYS: the room's nine keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 upkeep batch size, 3.. field, value pairs
--       (already validated by the caller; a new room must get every field)
-- Reply: reply() of room_lib.lua with code ok and no ticket
local now = clock(ARGV[1])
if #ARGV > 2 then
    redis.call('HSET', K_SETTINGS, unpack(ARGV, 3))
end
local s = load_settings()
settle(now, tonumber(ARGV[2]), s)
touch()
return reply('ok', '', nil, s, now)
