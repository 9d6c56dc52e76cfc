--!include room_lib.lua
-- room_checkin.lua: a ticket checks in (the waiting page's poll, an API client's poll).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 sweep interval ('' = none), 3 token, 4 upkeep batch size
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown | gone (state ended, why set)
local now, token = clock(ARGV[1]), ARGV[3]
local s, t, refusal, lease = live_ticket(now, ARGV[2], token, tonumber(ARGV[4]))
if refusal then
    return refusal
end
check_in(token, t, lease, s)
touch(now)
return reply('ok', token, t, s, now)
