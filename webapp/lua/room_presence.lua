--!include room_lib.lua
-- room_presence.lua: a seated ticket's live connection opens, beats or closes.
-- While open, each beat holds the seat `hold` seconds more; a close holds it for the
-- room's grace_seconds, so a reload or a glitch does not lose it. Several open sockets
-- of one ticket keep each other's seat: the next beat of any of them renews it.
-- KEYS: the room's nine keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 token, 3 op (open | beat | close),
--       4 hold seconds for open and beat, 5 upkeep batch size
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown | gone | not_seated
local now, token, op, hold = clock(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
local s, t, refusal = live_ticket(now, token, tonumber(ARGV[5]))
if refusal then
    return refusal
end
if t.st ~= 'offered' and t.st ~= 'admitted' then
    return reply('not_seated', token, t, s, now)
end
if op == 'close' then
    redis.call('ZADD', K_SEATS, 'XX', now + s.grace, token)
    t.sock = 'closed'
else
    redis.call('ZADD', K_SEATS, 'XX', now + hold, token)
    t.sock, t.st = 'open', 'admitted'
end
put_ticket(token, t)
touch()
return reply('ok', token, t, s, now)
