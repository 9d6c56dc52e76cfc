--!include room_lib.lua
-- room_configure.lua: creates a room or changes some of its settings, then applies them
-- (a larger capacity or a reopened room admits from the line at once). Only the fields
-- given are written, so two admins changing different settings at once both land.
-- KEYS: the room's fifteen keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 sweep interval ('' = none), 3 upkeep batch size,
--       4 who changes them, 5 n, the number of changed fields, 6 .. 5+2n field, value
--       pairs to write, then field, value pairs of every default (written first if the
--       room is new); all already validated by the caller
-- Reply: reply() of room_lib.lua with code ok and no ticket
local now, n = clock(ARGV[1]), tonumber(ARGV[5])
ACTOR = ARGV[4]
local created = redis.call('EXISTS', K_SETTINGS) == 0
if created and #ARGV > 5 + 2 * n then
    redis.call('HSET', K_SETTINGS, unpack(ARGV, 6 + 2 * n))
end
local changes = {}
if n > 0 then
    redis.call('HSET', K_SETTINGS, unpack(ARGV, 6, 5 + 2 * n))
    for i = 6, 5 + 2 * n, 2 do
        changes[#changes + 1] = ARGV[i] .. '=' .. ARGV[i + 1]
    end
end
audit(now, created and 'create' or 'settings', nil, table.concat(changes, ' '))
redis.call('HINCRBY', K_SETTINGS, 'version', 1)
local s = load_settings()
settle(now, lease_clock(now, ARGV[2]), tonumber(ARGV[3]), s)
touch()
return reply('ok', '', nil, s, now)
