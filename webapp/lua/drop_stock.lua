--!include drop_lib.lua
--!keys stock_request
-- drop_stock.lua: a report of the stock: units sold (a gated site's release, an admin
-- or a shop's API call), or the number left set outright. Sold units are counted once
-- per request id. At 0 left the room is sold out: the waiting tickets end (reason
-- sold_out, a batch here, the rest by the sweep's drop_tick.lua); raising it reopens.
-- KEYS: the room's (room_lib.lua), the drop's (drop_lib.lua), and stock_request: the
--       request id's record (string; '' request id: unused)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 op (sold |
--       left), 5 the number, 6 request id ('' = none), 7 who
-- Reply: {code, left ('' = not tracked), sold (all reported), replay (1: this request
--   id was counted before: nothing changed), how many waiting tickets it ended};
--   code ok | no_room | waitlist
local REQUEST_TTL = 86400  -- seconds a request id is remembered
local now = clock(ARGV[1])
slice_spent()
local op, n, request_id = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local s, lease = live_room(now)
if not s then
    return {'no_room', '', 0, 0, 0}
elseif s.waitlist then
    return {'waitlist', '', 0, 0, 0}
end
ACTOR = ARGV[7] ~= '' and ARGV[7] or ACTOR
if request_id ~= '' and redis.call('EXISTS', K_STOCK_REQUEST) == 1 then
    local was = cjson.decode(redis.call('GET', K_STOCK_REQUEST))
    touch(now)
    return {'ok', was.left, was.sold, 1, 0}
end
local d = drop_schedule()
-- Admissions are counted from the first report on: sold per admission.
redis.call('HSETNX', K_DROP, 'admitted0',
    tonumber(redis.call('HGET', K_STATS, 'count:admitted')) or 0)
local sold = tonumber(redis.call('HGET', K_DROP, 'sold')) or 0
local left = d.stock
if op == 'sold' then
    sold = redis.call('HINCRBY', K_DROP, 'sold', n)
    if left then
        left = math.max(left - n, 0)
    end
    audit(now, 'stock', nil, 'sold ' .. n .. (left and (', left ' .. left) or ''))
else
    left = n
    audit(now, 'stock', nil, 'left ' .. n)
end
redis.call('EXPIRE', K_DROP, DROP_TTL)
if left and left ~= d.stock then
    -- The settings' version rises, so every process's cached settings are read again.
    redis.call('HSET', K_SETTINGS, 'stock', left)
    redis.call('HINCRBY', K_SETTINGS, 'version', 1)
end
-- The report's figures (issue 31): units sold and the stock left per minute, and the
-- moment it sold out (the latest, should it be raised and sell out again)
local minute = math.floor(now / 60)
if op == 'sold' and redis.call('HINCRBY', K_HISTORY, minute .. ':sold', n) == n then
    created(K_HISTORY)
end
if left then
    redis.call('HSET', K_HISTORY, minute .. ':stock', left)
    created(K_HISTORY)
    if left <= 0 and (d.stock == nil or d.stock > 0) then
        redis.call('HSET', K_DROP, 'sold_out_at', tostring(now))
    end
end
local ended = 0
if left and left <= 0 then
    if not d.stock or d.stock > 0 then emit('room.sold_out', now, nil, nil, {sold = sold}) end
    ended = end_waiting(now, 'sold_out', BATCH, 5000)  -- (µs; the sweep ends the rest)
end
local shown = left and tostring(left) or ''
if request_id ~= '' then
    redis.call('SET', K_STOCK_REQUEST, cjson.encode({left = shown, sold = sold}), 'EX', REQUEST_TTL)
end
touch(now)
return {'ok', shown, sold, 0, ended}
