--!include room_lib.lua
-- room_sweep.lua: the background sweep's upkeep of one room (bounded per call).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua)
-- Reply: how many items were handled (-1 if the room does not exist); the caller
--   calls again while the answer is not 0.
local HISTORY_MINUTES = 1440  -- minutes of history kept for the charts
local HISTORY_FIGURES = {'joined', 'admitted', 'ended_left', 'ended_removed', 'ended_dropped',
    'ended_unclaimed', 'ended_grace', 'ended_session', 'ended_released', 'ended_sold_out',
    'ended_event_ended', 'w', 's', 'sold', 'stock',
    -- room_refused.lua's (webapp/domain/join_refusals.py REASONS)
    'refused_throttled', 'refused_prequeue_capped', 'refused_puzzle', 'refused_identity_required',
    'refused_identity_invalid', 'refused_sold_out', 'refused_event_ended', 'refused_not_open_yet',
    'refused_closed', 'refused_admission_control', 'refused_rejecting', 'refused_invalid_input'}

-- Samples the line and the seats once a minute for the charts, and forgets minutes
-- older than a day (at most an hour of them per call).
local function sample_history(now)
    local minute = math.floor(now / 60)
    if redis.call('HSETNX', K_HISTORY, minute .. ':w', redis.call('ZCARD', K_LINE)) == 0 then
        return
    end
    created(K_HISTORY)
    redis.call('HSET', K_HISTORY, minute .. ':s', redis.call('ZCARD', K_SEATS))
    local stock = redis.call('HGET', K_SETTINGS, 'stock')
    if stock and stock ~= '' then  -- a drop's stock, tracked: the report's line of it
        redis.call('HSETNX', K_HISTORY, minute .. ':stock', stock)
    end
    local oldest = minute - HISTORY_MINUTES
    local trimmed = tonumber(redis.call('HGET', K_HISTORY, 'trimmed')) or oldest - 1
    local from = math.max(trimmed + 1, oldest - 60)
    if from > oldest then
        return
    end
    local fields = {}
    for m = from, math.min(oldest, from + 59) do
        for _, figure in ipairs(HISTORY_FIGURES) do
            fields[#fields + 1] = m .. ':' .. figure
        end
    end
    redis.call('HDEL', K_HISTORY, unpack(fields))
    redis.call('HSET', K_HISTORY, 'trimmed', math.min(oldest, from + 59))
end

local now = clock(ARGV[1])
local s, _, handled = live_room(now)
if not s then
    return -1
end
sample_history(now)
renew_created()
return handled
