--!include join_limits_lib.lua
--!keys limits...
-- join_limits.lua: checks one join against every limit it is under and, if all pass,
-- counts it in each (join_limits_lib.lua; webapp/domain/join_limits.py). Used where
-- the count comes before something else that may refuse the join (a waitlist's
-- sign-up, a join that must solve a puzzle); every other join is counted by
-- room_join.lua in its own call. A refused join counts against nothing.
-- KEYS: limits, one per limit, in order (one hash tag: the room's)
-- ARGV: 1 n, the limits; 2 b, the buckets a window; then three per limit, in the same
--       order: the amount allowed, the current bucket's number, a bucket's length in ms
-- Reply: {0} if counted; else {n, c(k-b), ..., c(k)}: the first limit (1-based) that
--        refused, and its buckets' counts as found, oldest first
local limits, b = read_limits(K_LIMITS, 1, 1)
local refusal = limits_refuse(limits, b)
if refusal then
    return refusal
end
limits_count(limits, b)
return {0}
