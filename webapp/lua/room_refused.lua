-- room_refused.lua: a join the room refused (webapp/domain/join_refusals.py): counted
-- for /metrics ("count:refused_<reason>" in the stats hash, only growing) and for the
-- room's report ("<minute>:refused_<reason>" in the history hash, trimmed with the other
-- figures by room_sweep.lua). Nothing is counted for a room that does not exist.
-- KEYS: 1 settings (hash), 2 stats (hash), 3 history (hash): one room's, one hash tag
-- ARGV: 1 now (seconds), 2 reason (a word: throttled, puzzle, sold_out, ...)
-- Reply: 1 counted, 0 no such room
local STATS_TTL = 2592000  -- as room_base.lua's: an untouched room's statistics expire
if redis.call('EXISTS', KEYS[1]) == 0 then
    return 0
end
local field = 'refused_' .. ARGV[2]
redis.call('HINCRBY', KEYS[2], 'count:' .. field, 1)
redis.call('HINCRBY', KEYS[3], math.floor(tonumber(ARGV[1]) / 60) .. ':' .. field, 1)
for i = 2, 3 do
    if redis.call('TTL', KEYS[i]) == -1 then  -- made here: bounded as the scripts' are
        redis.call('EXPIRE', KEYS[i], STATS_TTL)
    end
end
return 1
