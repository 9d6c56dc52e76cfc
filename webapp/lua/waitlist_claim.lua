-- Uses an admitted entry's claim link: once, and only for an admitted entry.
-- KEYS[1] wl:entries hash   KEYS[2] wl:claimed hash (entry -> when claimed)
-- ARGV[1] entry id   ARGV[2] now
-- Reply: 'claimed' | 'used' (claimed before) | 'missing' | 'not_admitted'
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then
    return 'missing'
end
if cjson.decode(raw).st ~= 'admitted' then
    return 'not_admitted'
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
    return 'used'
end
return 'claimed'
