--!keys wl_entries wl_claimed wl_unclaimed
-- Uses an admitted entry's claim link: once, only for an admitted entry, and only
-- before its claim deadline (past it the entry lapses, whether or not the sweep has
-- come by yet).
-- KEYS: wl_entries hash; wl_claimed hash (entry -> when claimed); wl_unclaimed zset
--       (admitted entry -> claim deadline)
-- ARGV[1] entry id   ARGV[2] now
-- Reply: 'claimed' | 'used' (claimed before) | 'missing' | 'not_admitted' | 'lapsed'
local raw = redis.call('HGET', K_WL_ENTRIES, ARGV[1])
if not raw then
    return 'missing'
end
if redis.call('HEXISTS', K_WL_CLAIMED, ARGV[1]) == 1 then
    return 'used'
end
local st = cjson.decode(raw).st
if st == 'lapsed' then
    return 'lapsed'
elseif st ~= 'admitted' then
    return 'not_admitted'
end
local deadline = tonumber(redis.call('ZSCORE', K_WL_UNCLAIMED, ARGV[1]))
if deadline and deadline <= tonumber(ARGV[2]) then
    return 'lapsed'
end
redis.call('HSET', K_WL_CLAIMED, ARGV[1], ARGV[2])
redis.call('ZREM', K_WL_UNCLAIMED, ARGV[1])
return 'claimed'
