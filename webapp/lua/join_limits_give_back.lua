-- join_limits_give_back.lua: a join counted by join_limits.lua was refused after all
-- (the puzzle, the room closed, sold out, admission control): each limit's bucket it
-- was counted in gives that join back, so a refused join counts against nothing
-- (webapp/domain/join_limits.py). A bucket already gone (its window passed) is left.
-- KEYS: one per limit, as join_limits.lua took them (one hash tag: the room's)
-- ARGV: the bucket each was counted in, in the same order
-- Reply: 1
for i = 1, #KEYS do
    local n = tonumber(redis.call('HGET', KEYS[i], ARGV[i]) or '0')
    if n > 1 then
        redis.call('HINCRBY', KEYS[i], ARGV[i], -1)
    elseif n == 1 then
        redis.call('HDEL', KEYS[i], ARGV[i])
    end
end
return 1
