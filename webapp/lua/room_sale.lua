--!include room_lib.lua
-- room_sale.lua: what a site sold to a visitor whose pass it released (the release's
-- {"sold": n}, issue 23): counted in the room's statistics ("count:sold") and its
-- per-minute history ("<minute>:sold"), and in the audit log as "sale" with the count.
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 the ticket,
--       5 how many were sold (an integer > 0)
-- Reply: the room's sold count so far; 0 (nothing recorded) when there is no such room
local now, token, sold = clock(ARGV[1]), ARGV[4], math.floor(tonumber(ARGV[5]))
if redis.call('HEXISTS', K_SETTINGS, 'capacity') == 0 or sold <= 0 then
    return 0
end
local total = redis.call('HINCRBY', K_STATS, 'count:sold', sold)
redis.call('HINCRBY', K_HISTORY, math.floor(now / 60) .. ':sold', sold)
ACTOR = 'site'
audit(now, 'sale', get_ticket(token), tostring(sold))
touch()  -- rare: every key's TTL renewed, as the admins' scripts do
return total
