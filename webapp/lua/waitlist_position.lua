--!include waitlist_lib.lua
-- waitlist_position.lua: an entry's standing (a read: O(log n) whatever the list's size).
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 entry id
-- Reply: entry_reply() of waitlist_lib.lua; code ok | no_room | not_waitlist | unknown
local now = clock(ARGV[1])
local s, w, e, id, refusal = waitlist_entry(now, ARGV[4])
if refusal then
    return refusal
end
return entry_reply('ok', id, e, s, w, now)
