--!keys settings
-- hook_flag.lua: whether a room's scripts write its events for the webhooks (the
-- settings' webhooks field, read by events_lib.lua); a room that does not exist (its
-- settings have no capacity) is left alone, so no stray settings hash is made.
-- KEYS, by name: settings (the room's settings hash)
-- ARGV[1] 1 (write events) or 0
-- Reply: 1 changed, 0 not (already so, or no room)
if redis.call('HEXISTS', K_SETTINGS, 'capacity') == 0 then
    return 0
end
if ARGV[1] == '1' then
    return redis.call('HSET', K_SETTINGS, 'webhooks', '1')
end
return redis.call('HDEL', K_SETTINGS, 'webhooks')
