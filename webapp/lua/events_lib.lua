--!include room_base.lua
--!keys events
-- events_lib.lua: what happened in a room, for the webhooks (webapp/domain/webhooks.py,
-- docs/webhooks.md). The script that makes a change writes its event in the same run,
-- so no change is ever without its event, nor an event without its change. Included
-- by room_lib.lua; never run alone.
--
-- Written only while the room's settings say webhooks = 1 (some enabled endpoint takes
-- the room's events: Webhooks.flag_rooms keeps it true), read once per script, and only
-- by a script that has something to tell: a room nobody listens to pays nothing.
-- The stream (K_EVENTS, the room's key `events`) is capped: the webhook worker reads it
-- within a second while it runs; EVENTS_MAX is many minutes of a busy room's events.

local EVENTS_MAX = 100000
local HOOKED = nil

-- One event: `kind` (visitor.joined, ...), the ticket's token (the worker sends its
-- public id, never the token) and record `t` (its identity's sub), and `data` (a table,
-- JSON-encoded).
local function emit(kind, now, token, t, data)
    if HOOKED == nil then
        HOOKED = redis.call('HGET', K_SETTINGS, 'webhooks') == '1'
    end
    if not HOOKED then
        return
    end
    local sub = ''
    if t and t.id and string.sub(t.id, 1, 4) == 'sub:' then  -- a site's customer
        sub = string.sub(t.id, 5)
    end
    redis.call('XADD', K_EVENTS, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', kind,
        'at', tostring(now), 'ticket', token or '', 'sub', sub, 'data', cjson.encode(data))
    redis.call('EXPIRE', K_EVENTS, IDLE_TTL)
end
