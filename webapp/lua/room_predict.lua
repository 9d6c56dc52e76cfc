--!keys line predictions
-- room_predict.lua: keeps the wait predicted for tickets when they joined the line, so
-- each admission can record how right the prediction was (the panel's accuracy).
-- Written only while the ticket still waits, so nothing is left behind; a later join
-- of the same ticket (a check-in through the gate) keeps the first.
-- KEYS: line, predictions (the room's)
-- ARGV: 1 the predictions' TTL in seconds, then pairs: a token, "wait,low,high" in
--       seconds, maybe followed by the model's own ",wait,sd" before calibration
--       (webapp/domain/rooms.py coalesces a process's concurrent ones)
-- Reply: per pair, 1 if kept, 0 if the ticket no longer waits
local kept, wrote = {}, false
for i = 2, #ARGV, 2 do
    kept[#kept + 1] = 0
    if redis.call('ZSCORE', K_LINE, ARGV[i]) then
        -- the first prediction counts
        if redis.call('HSETNX', K_PREDICTIONS, ARGV[i], ARGV[i + 1]) == 1 then
            wrote = true
        end
        kept[#kept] = 1
    end
end
if wrote then  -- the hash may be new (emptied by admissions): a TTL, once per call
    redis.call('EXPIRE', K_PREDICTIONS, ARGV[1])
end
return kept
