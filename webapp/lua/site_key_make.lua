-- site_key_make.lua: a new site key of a room (issue 29): the room's site counts stock
-- with it (a release's "sold"), which a visitor's own pass never may. Kept with the room
-- (deleted with it), at most ARGV[3] live at once (several for rotation); audited.
-- KEYS: 1 the room's settings (hash: it must exist), 2 the room's site keys (hash: key
--       id -> JSON {hash, label, created}), 3 the room's audit log (stream)
-- ARGV: 1 key id, 2 the JSON record, 3 most live keys a room may have, 4 now, 5 who,
--       6 the audit log's length (about), 7 the label
-- Reply: 'ok' | 'no_room' | 'too_many'
if redis.call('EXISTS', KEYS[1]) == 0 then
    return 'no_room'
end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
    return 'too_many'
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local detail = 'made ' .. ARGV[1] .. (ARGV[7] ~= '' and (' ' .. ARGV[7]) or '')
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*', 'at', ARGV[4], 'kind', 'site_key',
    'who', ARGV[5], 'code', '', 'name', '', 'detail', detail)
return 'ok'
