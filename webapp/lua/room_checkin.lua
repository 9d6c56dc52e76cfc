--!include room_lib.lua
-- room_checkin.lua: a ticket checks in (the waiting page's poll, an API client's poll).
-- KEYS: the room's nine keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 token, 3 upkeep batch size
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown | gone (state ended, why set)
local now, token = clock(ARGV[1]), ARGV[2]
local s, t, refusal = live_ticket(now, token, tonumber(ARGV[3]))
if refusal then
    return refusal
end
check_in(token, t, now, s)
touch()
return reply('ok', token, t, s, now)
