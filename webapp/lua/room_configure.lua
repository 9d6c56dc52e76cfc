--!include waitlist_lib.lua
-- room_configure.lua: creates a room or changes some of its settings, then applies them
-- (a larger capacity or a reopened room admits from the line at once). Only the fields
-- given are written, so two admins changing different settings at once both land.
-- A change of kind or of a waitlist's ordering is refused while it would strand people
-- (waitlist_lib.lua change_refusal); a room that comes to lottery ordering commits to a
-- fresh secret seed (its SHA-256 is published, the seed revealed at the draw).
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 who changes
--       them, 5 a fresh draw seed (hex), 6 its SHA-256 (hex), 7 n, the number of
--       changed fields, 8 .. 7+2n field, value pairs to write, then field, value pairs
--       of every default (written first if the room is new); all already validated by
--       the caller
-- A new room's settings also get `born`: the server's time of its making, which tells
-- it from a room of the same name deleted before (room_admit.lua's request records).
-- Audited as create or settings (nothing when no value changes), detail above.
-- Reply: reply() of room_lib.lua with code ok and no ticket, or code conflict (nothing
--   changed) with the reason in its `why`
local now, n = clock(ARGV[1]), tonumber(ARGV[7])
ACTOR = ARGV[4]
local created = redis.call('EXISTS', K_SETTINGS) == 0
local before = redis.call('HMGET', K_SETTINGS, 'kind', 'ordering')
local old_kind, old_ordering = before[1] or 'live', before[2] or 'fifo'
local kind, ordering = old_kind, old_ordering
if created then
    kind, ordering, old_ordering = 'live', 'fifo', ''
end
for i = 8, 7 + 2 * n, 2 do
    if ARGV[i] == 'kind' then
        kind = ARGV[i + 1]
    elseif ARGV[i] == 'ordering' then
        ordering = ARGV[i + 1]
    end
end
local state = redis.call('HGET', W.meta, 'state') or ''
local refusal = not created and change_refusal(old_kind, kind, old_ordering, ordering, state)
if refusal then
    local answer = reply('conflict', '', nil, load_settings(), now)
    answer[10] = refusal
    return answer
end
if created and #ARGV > 7 + 2 * n then
    redis.call('HSET', K_SETTINGS, unpack(ARGV, 8 + 2 * n))
end
if created then
    -- When it was made, by the server's clock to the microsecond (whatever `now` the
    -- caller passed): told apart from a room of the same name before or after it
    local t = redis.call('TIME')
    redis.call('HSET', K_SETTINGS, 'born', t[1] .. '.' .. t[2])
end
-- The audit's detail: a JSON list of [field, old value, new value], the fields that
-- change (a new room's: every field given, its old value the default). A value over
-- 1 KiB (a page template: up to 64 KB) is kept as its length and SHA-1, so an audit
-- entry stays small: '#<bytes>:<sha1 hex>'. A secret (a setting named *_secret: the
-- identity tokens' shared secret) is never written out: '(hidden)' (or '' when unset).
local function audited(field, value)
    if value ~= '' and string.sub(field, -7) == '_secret' then
        return '(hidden)'
    elseif #value > 1024 then
        return '#' .. #value .. ':' .. redis.sha1hex(value)
    end
    return value
end
local changes = {}
for i = 8, 7 + 2 * n, 2 do
    local old = redis.call('HGET', K_SETTINGS, ARGV[i]) or ''
    if created or old ~= ARGV[i + 1] then
        changes[#changes + 1] = {ARGV[i], audited(ARGV[i], old), audited(ARGV[i], ARGV[i + 1])}
    end
end
if n > 0 then
    redis.call('HSET', K_SETTINGS, unpack(ARGV, 8, 7 + 2 * n))
end
if not created and #changes > 0 then emit('room.changed', now, nil, nil, {changes = changes}) end
if created or #changes > 0 then
    audit(now, created and 'create' or 'settings', nil, #changes > 0 and cjson.encode(changes) or '')
end
if ordering == 'lottery' and (old_ordering ~= 'lottery' or state == '') then
    commit_draw(now, ARGV[5], ARGV[6])
end
redis.call('HINCRBY', K_SETTINGS, 'version', 1)
ACTOR = 'engine'  -- whom a larger capacity lets in, the engine lets in
local s = live_room(now)  -- the settings as changed, and the upkeep under them
touch()
return reply('ok', '', nil, s, now)
