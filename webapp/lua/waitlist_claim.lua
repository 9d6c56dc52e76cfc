-- Uses an admitted entry's claim link: once, only for an admitted entry, and only
-- before its claim deadline (past it the entry lapses, whether or not the sweep has
-- come by yet).
-- KEYS[1] wl:entries hash   KEYS[2] wl:claimed hash (entry -> when claimed)
-- KEYS[3] wl:unclaimed zset (admitted entry -> claim deadline)
-- ARGV[1] entry id   ARGV[2] now
-- Reply: 'claimed' | 'used' (claimed before) | 'missing' | 'not_admitted' | 'lapsed'
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then
    return 'missing'
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
    return 'used'
end
local st = cjson.decode(raw).st
if st == 'lapsed' then
    return 'lapsed'
elseif st ~= 'admitted' then
    return 'not_admitted'
end
local deadline = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[1]))
if deadline and deadline <= tonumber(ARGV[2]) then
    return 'lapsed'
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return 'claimed'
