--!include room_lib.lua
-- room_email.lua: a waiting visitor gives (or removes) the email they are told at when a
-- seat is offered to them (room_lib.lua offer()). Only while the ticket waits: an
-- offered or seated ticket has been told already, an ended one needs nothing.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now (unused), 2 sweep interval (unused), 3 the ticket, 4 the email (already
--       normalised; '' = remove it), 5 the visitor's language
-- Reply: 1 set | 0 no waiting ticket
local t = get_ticket(ARGV[3])
if not t or t.st ~= 'waiting' then
    return 0
end
if ARGV[4] == '' then
    t.em, t.lg = nil, nil
else
    t.em, t.lg = ARGV[4], ARGV[5] ~= '' and ARGV[5] or 'en'
end
put_ticket(ARGV[3], t)
return 1
