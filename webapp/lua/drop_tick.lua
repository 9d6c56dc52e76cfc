--!include drop_draw_lib.lua
-- drop_tick.lua: the sweep's turn of a room with a schedule or stock (Visits.sweep):
-- commits the draw's seed once the pre-queue may open, holds the start when it is due
-- (a slice of it per call, carried on by the next while it places: drop_draw_lib.lua),
-- and at the end (ends_at_clears_line) or when sold out ends the waiting tickets, a
-- batch per call.
-- KEYS: the room's sixteen (room_lib.lua), then the drop's four (drop_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 a fresh nonce
--       (32 random bytes, hex) for a seed, should one be made, 5 '1': the schedule was
--       just changed (a drop held already, with a start now in the future again, makes
--       way for a new draw), 6 and 7 a start's slice: the most of the pre-queue one
--       call takes, its time budget in microseconds ('': drop_start.lua's defaults;
--       the budget bounds the tickets a sell-out or the end ends in this call too)
-- Reply: {phase, how many the start has placed so far (-1: no start ran in this call),
--   how many tickets it ended, more (1: the start has more to place: call again)}
--   phase: none (no such room, or a waitlist) | before | prequeue | open | ended
local now = clock(ARGV[1])
slice_spent()
local s, lease = live_room(now)
if not s or s.waitlist then
    return {'none', -1, 0, 0}
end
local d = drop_schedule()
if ARGV[5] == '1' and d.state == 'drawn' and d.starts_at and now < d.starts_at then
    redis.call('HSET', K_DROP, 'state', '')
    redis.call('DEL', K_DROP_DRAWN, K_DROP_PREQUEUE)
    d.state = ''
end
local phase = drop_phase(d, now)
local drawn, ended, more = -1, 0, false
-- The seed is committed as soon as a start is scheduled: before anyone can join.
if d.state == '' and phase ~= 'open' and phase ~= 'ended' then
    drop_commit(now, ARGV[4], d.starts_at)
end
-- A start under way is carried on whatever the schedule says now (it ends what began).
if phase == 'due' or d.state == 'placing' then
    local _
    _, drawn, more = drop_start(now, lease, s, ARGV[4], d.starts_at,
        tonumber(ARGV[6]) or 1000, tonumber(ARGV[7]) or 5000)
    drawn = drawn or -1
    phase = phase == 'due' and 'open' or phase
end
local budget = tonumber(ARGV[7]) or 5000
if sold_out(d) then
    ended = end_waiting(now, 'sold_out', BATCH, budget)
elseif phase == 'ended' and d.clears then
    ended = end_waiting(now, 'event_ended', BATCH, budget)
end
touch(now)
return {phase, drawn, ended, more and 1 or 0}
