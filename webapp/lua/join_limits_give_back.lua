--!keys limits...
-- join_limits_give_back.lua: a join counted by join_limits.lua was refused after all
-- (the puzzle, the room closed, sold out, admission control): each limit's bucket it
-- was counted in gives that join back, so a refused join counts against nothing
-- (webapp/domain/join_limits.py). A bucket already gone (its window passed) is left.
-- KEYS: limits, one per limit, as join_limits.lua took them (one hash tag: the room's)
-- ARGV: the bucket each was counted in, in the same order
-- Reply: 1
for i = 1, #K_LIMITS do
    local n = tonumber(redis.call('HGET', K_LIMITS[i], ARGV[i]) or '0')
    if n > 1 then
        redis.call('HINCRBY', K_LIMITS[i], ARGV[i], -1)
    elseif n == 1 then
        redis.call('HDEL', K_LIMITS[i], ARGV[i])
    end
end
return 1
