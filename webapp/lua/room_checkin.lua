--!include room_lib.lua
-- room_checkin.lua: tickets of one room check in (the waiting page's poll, an API
-- client's poll), in the order given: the same as one script per ticket run back to
-- back at one `now`, in one call (webapp/domain/rooms.py coalesces a process's
-- concurrent check-ins of a room, so a rush pays the call's cost once per batch).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4.. the tokens
-- Reply: one reply() of room_lib.lua per token, in order; code ok | no_room | unknown |
--   gone (state ended, why set)
local now = clock(ARGV[1])
local replies = {}
local s, lease = live_room(now)
if not s then
    for i = 4, #ARGV do
        replies[#replies + 1] = reply('no_room', ARGV[i], nil, nil, now)
    end
    return replies
end
for i = 4, #ARGV do
    local token = ARGV[i]
    local t, refusal = ticket_in(s, now, lease, token)
    if not refusal then
        check_in(token, t, lease, s)
    end
    replies[#replies + 1] = refusal or reply('ok', token, t, s, now)
end
touch(now)
return replies
