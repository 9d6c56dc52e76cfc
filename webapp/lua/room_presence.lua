--!include room_lib.lua
-- room_presence.lua: a seated ticket's live connection opens, beats or closes.
-- While open, each beat holds the seat `hold` seconds more; a close holds it for the
-- room's grace_seconds (at most), so a reload or a glitch does not lose it. Several open sockets
-- of one ticket keep each other's seat: the next beat of any of them renews it.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 token,
--       5 op (open | beat | close), 6 hold seconds for open and beat
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown | gone | not_seated
local now, token, op, hold = clock(ARGV[1]), ARGV[4], ARGV[5], tonumber(ARGV[6])
local s, t, refusal, lease = live_ticket(now, token)
if refusal then
    return refusal
end
if t.st ~= 'offered' and t.st ~= 'admitted' then
    return reply('not_seated', token, t, s, now)
end
if op == 'close' then
    -- Never later than the seat's hold: a close that lands late (Redis was away) must
    -- not keep the seat longer than the last beat promised.
    redis.call('ZADD', K_SEATS, 'XX', 'LT', lease + s.grace, token)
    t.sock = 'closed'
else
    redis.call('ZADD', K_SEATS, 'XX', lease + hold, token)
    t.sock, t.st = 'open', 'admitted'
end
put_ticket(token, t)
touch(now)
return reply('ok', token, t, s, now)
