--!include room_lib.lua
-- room_email.lua: a waiting visitor gives (or removes) the email they are told at when a
-- seat is offered to them (room_lib.lua offer()). Only while the ticket waits: an
-- offered or seated ticket has been told already, an ended one needs nothing. The
-- line's count of emails follows (count_emailed(), room_stats.lua).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; all unused),
--       4 the ticket, 5 the email (already normalised; '' = remove it), 6 the
--       visitor's language
-- Reply: 1 set | 0 no waiting ticket
local token, email, lang = ARGV[4], ARGV[5], ARGV[6]
local t = get_ticket(token)
if not t or t.st ~= 'waiting' then
    return 0
end
count_emailed(t, -1)
if email == '' then
    t.em, t.lg = nil, nil
else
    t.em, t.lg = email, lang ~= '' and lang or 'en'
end
count_emailed(t, 1)
put_ticket(token, t)
renew_created()  -- (the statistics, had the count made them)
return 1
