--!include room_lib.lua
-- room_leave.lua: a ticket gives up its seat or place (or an admin removes it), audited
-- as leave (by 'visitor') or remove (by the admin), the detail the state it had.
-- Idempotent: leaving an ended ticket changes nothing and answers ok.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 token,
--       5 why (left | removed | released: by the site), 6 who removes ('' = the visitor)
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown
local now, token, why = clock(ARGV[1]), ARGV[4], ARGV[5]
local s, lease = live_room(now, false)  -- the upkeep after the leave: its seat is offered at once
if not s then
    return reply('no_room', token, nil, nil, now)
elseif not lease then  -- a waitlist room: no live tickets
    return reply('unknown', token, nil, s, now)
end
local t = get_ticket(token)
if t and t.st ~= 'ended' and not lapse_if_due(token, t, now, lease) then
    -- the admin's removal, or the visitor's own leave (both audited); the upkeep after
    -- it is the engine's
    ACTOR = (ARGV[6] and ARGV[6] ~= '') and ARGV[6] or 'visitor'
    end_ticket(token, t, why, now)
    ACTOR = 'engine'
end
upkeep(now, lease, s)
touch()  -- an unknown ticket too: the upkeep may have made keys
if not t then
    return reply('unknown', token, nil, s, now)
end
return reply('ok', token, t, s, now)
