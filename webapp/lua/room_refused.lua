--!keys settings stats history
-- room_refused.lua: a join the room refused (webapp/domain/join_refusals.py): counted
-- for /metrics ("count:refused_<reason>" in the stats hash, only growing) and for the
-- room's report ("<minute>:refused_<reason>" in the history hash, trimmed with the other
-- figures by room_sweep.lua). Nothing is counted for a room that does not exist.
-- KEYS: settings, stats, history (the room's hashes, one hash tag)
-- ARGV: 1 now (seconds), 2 reason (a word: throttled, puzzle, sold_out, ...)
-- Reply: 1 counted, 0 no such room
local STATS_TTL = 2592000  -- as room_base.lua's: an untouched room's statistics expire
if redis.call('EXISTS', K_SETTINGS) == 0 then
    return 0
end
local field = 'refused_' .. ARGV[2]
redis.call('HINCRBY', K_STATS, 'count:' .. field, 1)
redis.call('HINCRBY', K_HISTORY, math.floor(tonumber(ARGV[1]) / 60) .. ':' .. field, 1)
for _, key in ipairs({K_STATS, K_HISTORY}) do
    if redis.call('TTL', key) == -1 then  -- made here: bounded as the scripts' are
        redis.call('EXPIRE', key, STATS_TTL)
    end
end
return 1
