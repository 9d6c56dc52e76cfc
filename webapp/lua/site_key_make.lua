--!keys settings site_keys audit
-- site_key_make.lua: a new site key of a room (issue 29): the room's site counts stock
-- with it (a release's "sold"), which a visitor's own pass never may. Kept with the room
-- (deleted with it), at most ARGV[3] live at once (several for rotation); audited.
-- KEYS: settings, the room's settings (hash: it must exist); site_keys, the room's site
--       keys (hash: key id -> JSON {hash, label, created}); audit, its audit log (stream)
-- ARGV: 1 key id, 2 the JSON record, 3 most live keys a room may have, 4 now, 5 who,
--       6 the audit log's length (about), 7 the label
-- Reply: 'ok' | 'no_room' | 'too_many'
if redis.call('EXISTS', K_SETTINGS) == 0 then
    return 'no_room'
end
if redis.call('HLEN', K_SITE_KEYS) >= tonumber(ARGV[3]) then
    return 'too_many'
end
redis.call('HSET', K_SITE_KEYS, ARGV[1], ARGV[2])
local detail = 'made ' .. ARGV[1] .. (ARGV[7] ~= '' and (' ' .. ARGV[7]) or '')
redis.call('XADD', K_AUDIT, 'MAXLEN', '~', ARGV[6], '*', 'at', ARGV[4], 'kind', 'site_key',
    'who', ARGV[5], 'code', '', 'name', '', 'detail', detail)
return 'ok'
