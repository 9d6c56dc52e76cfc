--!keys send_rate
-- chat_rate.lua: a sliding-window limit on one user's sends (a log of send times).
-- Its key is the user's, not the chat's (another slot), so it runs before chat_send.
-- KEYS: send_rate, the user's send-rate zset (entry -> send time)
-- ARGV: 1 now, 2 window seconds, 3 most sends per window, 4 a unique entry for this send
-- Reply: {allowed 1|0, seconds until the next send is allowed (string), '' when allowed}
local key, now = K_SEND_RATE, tonumber(ARGV[1])
local window, limit, entry = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return {0, tostring(tonumber(oldest[2]) + window - now)}
end
redis.call('ZADD', key, now, entry)
redis.call('PEXPIRE', key, math.ceil(window * 1000))
return {1, ''}
