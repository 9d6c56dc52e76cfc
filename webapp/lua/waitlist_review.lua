--!include waitlist_lib.lua
-- waitlist_review.lua: an admin releases (credits) or voids a referral boost held for
-- review, or voids one already credited (the referrer loses the points that leg gave,
-- and its place follows at once). The cap still applies to a release; each is audited
-- under the admin's name.
-- KEYS: the room's sixteen keys (room_lib.lua), then the waitlist's (waitlist_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua; only now is
--       used), 4 the referee's entry id, 5 release | void, 6 who
-- Reply: entry_reply() of the referee; code ok | no_room | not_waitlist | unknown |
--   not_held (neither held, nor credited when voiding)
local now = clock(ARGV[1])
ACTOR = ARGV[6]
local s, w, x, x_id, refusal = waitlist_entry(now, ARGV[4])
if refusal then
    return refusal
end
if x.rs == 'credited' and ARGV[5] == 'void' then
    local r = get_entry(x.by)
    local gave = x.rp or 0
    x.rs, x.rw, x.rp = 'void', 'admin', 0
    if r then
        r.p = math.max((r.p or 0) - gave, 0)
        local rf = counts(r)
        rf.c = math.max(rf.c - 1, 0)
        put_entry(x.by, r)
        reposition(x.by, r, w)
        audit(now, 'referral_void', named(r), 'from ' .. x.rc .. ': -' .. gave .. ', score '
            .. r.p .. ' (admin)')
    end
    put_entry(x_id, x)
    touch_waitlist()
    return entry_reply('ok', x_id, x, s, w, now)
end
if x.rs ~= 'held' then
    return entry_reply('not_held', x_id, x, s, w, now)
end
redis.call('ZREM', W.held, x_id)
local r = get_entry(x.by)
if r then
    local rf = counts(r)
    rf.h = math.max(rf.h - 1, 0)
end
if r and ARGV[5] == 'release' then
    credit(x_id, x, x.by, r, w, now, ' (released)')
else
    x.rs, x.rw = 'void', r and 'admin' or 'gone'
    if r then
        put_entry(x.by, r)
        audit(now, 'referral_void', named(r), 'from ' .. x.rc .. ': void (admin)')
    end
end
put_entry(x_id, x)
touch_waitlist()
return entry_reply('ok', x_id, x, s, w, now)
