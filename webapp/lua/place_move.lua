--!keys link_used holder
-- place_move.lua: takes a move-to-another-device link, once. The first taker marks the
-- link used and names the browser that holds the ticket from now on; a second taker
-- changes nothing.
-- KEYS: link_used, the link's used marker; holder, the ticket's holder
-- ARGV: 1 the link's lifetime in seconds (the marker's TTL), 2 the holder's TTL in
--       seconds, 3 the new holder (a random browser id)
-- Reply: 1 taken | 0 already used
if redis.call('SET', K_LINK_USED, '1', 'NX', 'EX', tonumber(ARGV[1])) == false then
    return 0
end
redis.call('SET', K_HOLDER, ARGV[3], 'EX', tonumber(ARGV[2]))
return 1
