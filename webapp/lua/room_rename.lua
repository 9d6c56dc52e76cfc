--!include room_lib.lua
-- room_rename.lua: a visitor changed their display name; their live ticket carries the
-- new one, so the room's participant list and the admin panel show it from their next
-- update. An ended ticket keeps the name it ended with.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; all unused),
--       4 the ticket, 5 the new name
-- Reply: 1 renamed | 0 no live ticket
local t = get_ticket(ARGV[4])
if not t or t.st == 'ended' then
    return 0
end
t.n = ARGV[5]
put_ticket(ARGV[4], t)
return 1
