--!include waitlist_lib.lua
-- waitlist_rank.lua: ranks some of a draw's participants. Each score is 2^32 plus the
-- first 52 bits of HMAC-SHA256(seed, entry id), worked out by the caller. An entry
-- already ranked, or no longer waiting, is left alone, so two processes ranking at once
-- (the sweep and an admin) do no harm. The draw is done when nobody is left unranked.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 who draws, then entry id, score pairs
-- Reply: {state, participants left unranked}
local now = clock(ARGV[1])
ACTOR = ARGV[4]
if redis.call('HGET', W.meta, 'state') ~= 'ranking' then
    return {redis.call('HGET', W.meta, 'state') or '', 0}
end
for i = 5, #ARGV - 1, 2 do
    local id, score = ARGV[i], ARGV[i + 1]
    local was = tonumber(redis.call('ZSCORE', W.line, id))
    if was and was < DRAWN then
        redis.call('ZADD', W.line, score, id)
        redis.call('ZADD', W.ready, 'XX', score, id)
        redis.call('RPUSH', W.drawn, id)
    end
end
local state = finish_draw_if_ranked(now)
return {state, redis.call('ZCOUNT', W.line, '-inf', DRAWN_BELOW)}
