--!keys prequeue_address prequeue_network
-- prequeue_cap.lua: a drop's pre-queue takes at most so many entries from one address
-- and from one network over its whole length (issue 29: a lottery ticket is not for
-- sale, whatever the per-minute join limits). 'take' counts one entry against both if
-- both have room; 'give' gives back one that a refused join had taken.
-- KEYS: prequeue_address, the pre-queue's entries per address (hash: address ->
--       entries), prequeue_network, per network (hash: network -> entries); both
--       under the room's hash tag
-- ARGV: 1 op (take | give), 2 address, 3 network, 4 most per address, 5 most per
--       network, 6 milliseconds both are kept (past the drop's start)
-- Reply: 0 counted (or given back) | 1 the address has its most | 2 the network has
local counted = {K_PREQUEUE_ADDRESS, K_PREQUEUE_NETWORK}
if ARGV[1] == 'give' then
    for i, who in ipairs({ARGV[2], ARGV[3]}) do
        if tonumber(redis.call('HINCRBY', counted[i], who, -1)) <= 0 then
            redis.call('HDEL', counted[i], who)
        end
    end
    return 0
end
if tonumber(redis.call('HGET', K_PREQUEUE_ADDRESS, ARGV[2]) or '0') >= tonumber(ARGV[4]) then
    return 1
end
if tonumber(redis.call('HGET', K_PREQUEUE_NETWORK, ARGV[3]) or '0') >= tonumber(ARGV[5]) then
    return 2
end
for i, who in ipairs({ARGV[2], ARGV[3]}) do
    redis.call('HINCRBY', counted[i], who, 1)
    redis.call('PEXPIRE', counted[i], ARGV[6])
end
return 0
