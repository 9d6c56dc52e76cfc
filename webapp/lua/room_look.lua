--!include room_lib.lua
--!keys holders...
-- room_look.lua: waiting pages look at their tickets (htmx's poll of the waiting page),
-- in the order given, in one call (webapp/domain/rooms.py coalesces a process's
-- concurrent looks at a room, as it does check-ins). A ticket whose place moved to
-- another browser than the page's (Moves: its holder key) is not touched. A waiting
-- ticket checks in, as in room_checkin.lua. An offered or held seat is only looked at:
-- a page that is not the room neither claims it nor holds it any longer.
-- KEYS: the room's sixteen keys (room_lib.lua), then each ticket's move holder
--   (Keys.move_holder), in the order of the tickets
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), then for each
--   ticket its token and the page's holder id ('' = the browser never took a moved
--   place)
-- Reply: one reply() of room_lib.lua per ticket, in order; code ok | no_room | unknown |
--   gone (state ended, why set) | moved (another browser holds the place)
local now = clock(ARGV[1])
local replies = {}
local s, lease = live_room(now)
for i = 1, (#ARGV - 3) / 2 do
    local token, holder = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
    local current = redis.call('GET', K_HOLDERS[i])
    if current and current ~= holder then
        replies[i] = reply('moved', token, nil, s, now)
    elseif not s then
        replies[i] = reply('no_room', token, nil, nil, now)
    else
        local t, refusal = ticket_in(s, now, lease, token)
        if not refusal and t.st == 'waiting' then
            check_in(token, t, lease, s)
        end
        replies[i] = refusal or reply('ok', token, t, s, now)
    end
end
if s then
    touch(now)
end
return replies
