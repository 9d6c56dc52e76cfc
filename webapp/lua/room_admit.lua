--!include waitlist_lib.lua
--!keys admit_request
-- room_admit.lua: an admin lets the next `count` people in line in (batch admission):
-- the next by the room's order (under queueing_method random, each drawn as the engine
-- draws, room_lib.lua offer_drawn). Each is offered a seat, claimed by their next
-- check-in or socket as any offer is.
-- In a waitlist room the next `count` confirmed entries are admitted instead (no seat;
-- capacity does not apply), each with its message in the outbox.
-- Idempotent by request id: the same id again admits nobody new and answers as the
-- first time did. One script, so two admins at once never admit one person twice.
-- KEYS: the room's (room_lib.lua), the waitlist's (waitlist_lib.lua), and admit_request:
--   this request's record (a string with the room's birth and the request's answer,
--   kept a day)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 count,
--       5 request id ('' = none), 6 '1' to admit beyond the free seats, 7 who admits,
--       8 one waiting ticket to admit instead of the head ('' = none)
-- Reply: {code, JSON list of the admitted tokens, '1' if a replay}; code ok | no_room |
--   not_waiting (the one ticket asked for is not in line) | unconfirmed (the one entry
--   asked for has not confirmed its email) | not_drawn (a lottery before its draw)
local now = clock(ARGV[1])
local s, lease = live_room(now, false)  -- the upkeep after the replay check, below
if not s then
    return {'no_room', '[]', '0'}
end
local count, who, one = tonumber(ARGV[4]), ARGV[7], ARGV[8] or ''
local function replayed(answer)
    if lease then
        touch(now)  -- the lease clock may have made its key
    end
    return {'ok', answer, '1'}
end
-- The record of a request is "<born> <answer>": the room it was made in (settings
-- field born, set when the room is created), so a room deleted and made again under
-- the same name does not replay the old room's admissions. (A record without it, from
-- before: the answer alone.)
local request = ARGV[5]
local born = request ~= '' and redis.call('HGET', K_SETTINGS, 'born') or ''
if request ~= '' then
    local done = redis.call('GET', K_ADMIT_REQUEST)
    if done then
        local made_in, answer = string.match(done, '^(%S*) (.*)$')
        if not made_in then
            return replayed(done)
        elseif made_in == born then
            return replayed(answer)
        end
    end
end
-- The answer, kept under the request id for a replay, and the TTLs renewed.
local function finish(admitted, renew)
    local answer = #admitted > 0 and cjson.encode(admitted) or '[]'
    if request ~= '' then
        redis.call('SET', K_ADMIT_REQUEST, born .. ' ' .. answer, 'EX', 86400)
    end
    renew()
    return {'ok', answer, '0'}
end
if s.waitlist then
    ACTOR = who
    local w = load_waitlist()
    if w.ordering == 'lottery' and w.state ~= 'drawn' then
        return {'not_drawn', '[]', '0'}
    end
    local admitted = {}
    if one ~= '' then
        local e = get_entry(one)
        if not e or e.st ~= 'waiting' then
            return {'not_waiting', '[]', '0'}
        elseif not e.ok then
            return {'unconfirmed', '[]', '0'}
        end
        admit_entry(one, e, w, now, 'waitlist')
        admitted[1] = one
    else
        admitted = admit_from_ready(w, count, now, 'waitlist')
    end
    return finish(admitted, touch_waitlist)
end
upkeep(now, lease, s)  -- the engine's own upkeep first, audited as the engine's
ACTOR = who
local wanted = count
if ARGV[6] ~= '1' then
    wanted = math.min(wanted, math.max(s.capacity - redis.call('ZCARD', K_SEATS), 0))
end
local admitted, looked = {}, 0
if one ~= '' then
    local t = get_ticket(one)
    if not t or t.st ~= 'waiting' or lapse_if_due(one, t, now, lease) then
        return {'not_waiting', '[]', '0'}
    end
    if wanted > 0 then
        offer(one, t, now, lease + offer_window(t, s))
        admitted[1] = one
    end
    wanted = 0
end
while #admitted < wanted and looked < wanted + BATCH do
    -- the head, or under random order a draw (room_lib.lua); never admits the absent
    local head, offered = offer_next(now, lease, s)
    if not head then
        break
    end
    looked = looked + 1
    if offered then
        admitted[#admitted + 1] = head
    end
end
return finish(admitted, touch)
