-- room_predict.lua: keeps the wait predicted for a ticket when it joined the line, so
-- its admission can record how right the prediction was (the panel's accuracy).
-- Written only while the ticket still waits, so nothing is left behind; a later join
-- of the same ticket (a check-in through the gate) keeps the first.
-- KEYS: 1 line, 2 predictions (the room's keys)
-- ARGV: 1 token, 2 "wait,low,high" in seconds, 3 the predictions' TTL in seconds
-- Reply: 1 if kept, 0 if the ticket no longer waits
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
    -- the first prediction counts; the hash may be new (emptied by admissions): a TTL
    if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
        redis.call('EXPIRE', KEYS[2], ARGV[3])
    end
    return 1
end
return 0
