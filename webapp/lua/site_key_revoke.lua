--!keys site_keys audit
-- site_key_revoke.lua: a room's site key ends at once (issue 29); audited.
-- KEYS: 1 the room's site keys (hash), 2 the room's audit log (stream)
-- ARGV: 1 key id, 2 now, 3 who, 4 the audit log's length (about)
-- Reply: 1 revoked | 0 no live key of that id (nothing changed)
if redis.call('HDEL', K_SITE_KEYS, ARGV[1]) == 0 then
    return 0
end
redis.call('XADD', K_AUDIT, 'MAXLEN', '~', ARGV[4], '*', 'at', ARGV[2], 'kind', 'site_key',
    'who', ARGV[3], 'code', '', 'name', '', 'detail', 'revoked ' .. ARGV[1])
return 1
