--!include waitlist_lib.lua
-- waitlist_confirm.lua: an entry confirms its email (double opt-in). From now on it can
-- be admitted, and its referral leg, if any, is judged: credited, held or void.
-- Idempotent: confirming again changes nothing. A link names the address it was sent
-- to (ARGV 5, the first 12 hex digits of SHA-1 of "<entry id>:<address>"): one sent to
-- an address the entry has since corrected (waitlist_resend.lua) confirms nothing.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 entry id, 5 the link's address tag ('' = a link without one: it holds
--       while the address was never corrected)
-- Reply: entry_reply() of waitlist_lib.lua; code ok | no_room | not_waitlist | unknown |
--   old_address
local now = clock(ARGV[1])
local s, w, e, id, refusal = waitlist_entry(now, ARGV[4])
if refusal then
    return refusal
end
local tag = ARGV[5] or ''
local fits = tag == '' and not e.ec or tag == redis.sha1hex(id .. ':' .. e.em):sub(1, 12)
if not e.ok and not fits then
    return entry_reply('old_address', id, e, s, w, now)
end
if not e.ok then
    e.ok = true
    emit('waitlist.confirmed', now, id, nil, {})
    if e.st == 'waiting' then
        local score = redis.call('ZSCORE', W.line, id)
        if score then
            redis.call('ZADD', W.ready, score, id)
        end
    end
    if e.rs == 'pending' then
        judge_referral(id, e, w, now)
    end
    put_entry(id, e)
    touch_waitlist()
end
return entry_reply('ok', id, e, s, w, now)
