--!include waitlist_lib.lua
-- waitlist_resend.lua: an entry that has not confirmed its email asks for the
-- confirmation email again, perhaps at a corrected address (a typo at sign-up). A new
-- address replaces the old one in the mailbox index and on the entry (field ec counts
-- the corrections), so later emails go there; the old address's links stop working, as
-- a confirmation link names the address it was sent to (waitlist_confirm.lua checks).
-- Throttled on the entry, counted with the sign-up's own (cn, cl): at most ARGV[7]
-- confirmation emails in all, and ARGV[8] seconds between two to the same address (a
-- corrected address is written to at once, within the same total).
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 entry id, 5 the corrected email as mailed ('' = the same address),
--       6 its key (one per mailbox), 7 most confirmation emails per entry, 8 least
--       seconds between two to one address
-- Reply: {code, seconds}; code sent | no_room | not_waitlist | unknown | confirmed |
--   not_waiting | too_many | taken (the corrected address is another entry's) |
--   too_soon (seconds: until one may be sent)
local now = clock(ARGV[1])
local s, w, e, id, refusal = waitlist_entry(now, ARGV[4])
if refusal then
    return {refusal[1], 0}
end
if e.ok then
    return {'confirmed', 0}
end
if e.st ~= 'waiting' then
    return {'not_waiting', 0}
end
local sent = e.cn or 1
if sent >= tonumber(ARGV[7]) then
    return {'too_many', 0}
end
local moving = ARGV[5] ~= '' and ARGV[6] ~= e.ek
if moving then
    local other = redis.call('HGET', W.emails, ARGV[6])
    if other and other ~= id then
        return {'taken', 0}
    end
    redis.call('HDEL', W.emails, e.ek)
    redis.call('HSET', W.emails, ARGV[6], id)
    e.em, e.ek, e.ec = ARGV[5], ARGV[6], (e.ec or 0) + 1
    audit(now, 'email_change', named(e), 'corrected before confirming')
else
    local wait = (e.cl or e.j) + tonumber(ARGV[8]) - now
    if wait > 0 then
        return {'too_soon', math.ceil(wait)}
    end
end
e.cn, e.cl = sent + 1, now
put_entry(id, e)
notify('confirm', id, e, now, 'nth', tostring(sent + 1))
touch_waitlist()
return {'sent', 0}
