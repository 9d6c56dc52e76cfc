--!include room_lib.lua
-- room_move.lua: an admin moves a waiting ticket to another place in line (1 = front).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now ('' = Redis TIME), 2 sweep interval ('' = none), 3 token, 4 the place,
--       5 who moves it, 6 upkeep batch size
-- Reply: reply() of room_lib.lua; code ok | no_room | unknown | gone | not_waiting
local now, token, place = clock(ARGV[1]), ARGV[3], math.max(tonumber(ARGV[4]), 1)
local s, t, refusal, lease = live_ticket(now, ARGV[2], token, tonumber(ARGV[6]))
if refusal then
    return refusal
end
ACTOR = ARGV[5]  -- after the upkeep, which is the engine's
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
