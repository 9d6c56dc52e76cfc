--!include room_lib.lua
-- room_notice.lua: an admin sets the room's notice (shown on every waiting page and in
-- the room until cleared) or clears it with ''. Raises the settings version, so every
-- process's next answer carries it.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval (unused), 3 upkeep batch size (unused) (room_base.lua),
--       4 the text ('' = clear), 5 who
-- Reply: 'ok' | 'no_room'
local now = clock(ARGV[1])
if redis.call('EXISTS', K_SETTINGS) == 0 then
    return 'no_room'
end
ACTOR = ARGV[5]
redis.call('HSET', K_SETTINGS, 'notice', ARGV[4], 'notice_at', tostring(now))
redis.call('HINCRBY', K_SETTINGS, 'version', 1)
audit(now, ARGV[4] == '' and 'notice_cleared' or 'notice', nil, ARGV[4])
return 'ok'
