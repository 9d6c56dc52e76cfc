-- prequeue_cap.lua: a drop's pre-queue takes at most so many entries from one address
-- and from one network over its whole length (issue 29: a lottery ticket is not for
-- sale, whatever the per-minute join limits). 'take' counts one entry against both if
-- both have room; 'give' gives back one that a refused join had taken.
-- KEYS: 1 the pre-queue's entries per address (hash: address -> entries), 2 per
--       network (hash: network -> entries); both under the room's hash tag
-- ARGV: 1 op (take | give), 2 address, 3 network, 4 most per address, 5 most per
--       network, 6 milliseconds both are kept (past the drop's start)
-- Reply: 0 counted (or given back) | 1 the address has its most | 2 the network has
if ARGV[1] == 'give' then
    for i, who in ipairs({ARGV[2], ARGV[3]}) do
        if tonumber(redis.call('HINCRBY', KEYS[i], who, -1)) <= 0 then
            redis.call('HDEL', KEYS[i], who)
        end
    end
    return 0
end
if tonumber(redis.call('HGET', KEYS[1], ARGV[2]) or '0') >= tonumber(ARGV[4]) then
    return 1
end
if tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0') >= tonumber(ARGV[5]) then
    return 2
end
for i, who in ipairs({ARGV[2], ARGV[3]}) do
    redis.call('HINCRBY', KEYS[i], who, 1)
    redis.call('PEXPIRE', KEYS[i], ARGV[6])
end
return 0
