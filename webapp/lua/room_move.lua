--!include room_lib.lua
-- room_move.lua: an admin moves a waiting ticket to another place in line (1 = front).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 token,
--       5 the place, 6 who moves it
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown | gone | not_waiting
local now, token, place = clock(ARGV[1]), ARGV[4], math.max(tonumber(ARGV[5]), 1)
local s, t, refusal = live_ticket(now, token)
if refusal then
    return refusal
end
ACTOR = ARGV[6]  -- after the upkeep, which is the engine's
if t.st ~= 'waiting' then
    return reply('not_waiting', token, t, s, now)
end
local was = redis.call('ZRANK', K_LINE, token) + 1
redis.call('ZREM', K_LINE, token)
place = math.min(place, redis.call('ZCARD', K_LINE) + 1)
-- Scores between the neighbours at the new place: the line's order is the score's.
local before = redis.call('ZRANGE', K_LINE, place - 2, place - 2, 'WITHSCORES')
local after = redis.call('ZRANGE', K_LINE, place - 1, place - 1, 'WITHSCORES')
local score
if place == 1 or #before == 0 then
    score = #after > 0 and tonumber(after[2]) - 1 or t.seq
elseif #after == 0 then
    score = tonumber(before[2]) + 1
else
    score = (tonumber(before[2]) + tonumber(after[2])) / 2
end
redis.call('ZADD', K_LINE, score, token)
audit(now, 'move', t, was .. '->' .. (redis.call('ZRANK', K_LINE, token) + 1))
touch()
return reply('ok', token, t, s, now)
