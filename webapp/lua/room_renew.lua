--!include room_lib.lua
-- room_renew.lua: a site room's pass renewed at the gate (issue 32: one call, where a
-- renewal was pass_issue.lua then room_checkin.lua). The seat remembers the pass it
-- handed out last (its "pj"), and only that pass renews it: a copied pass works for
-- one holder past the next renewal (issue 29). Then the ticket checks in, as
-- room_checkin.lua does (the seat held the room's session_seconds more; an offered
-- seat taken).
-- KEYS: the room's sixteen keys (room_lib.lua)
-- ARGV: 1 now, 2 sweep interval, 3 upkeep batch size (room_base.lua), 4 ticket, 5 the
--       new pass's jti, 6 the jti of the pass presented
-- Reply: {reply(), the ticket's identity ('' = none)}; reply()'s code ok | no_room |
--   unknown | gone (nothing changed but upkeep) | copied (the presented pass is not
--   the seat's last: nothing changed)
local now = clock(ARGV[1])
local token, jti, presented = ARGV[4], ARGV[5], ARGV[6]
local s, t, refusal, lease = live_ticket(now, token)
if refusal then
    return {refusal, ''}
end
if t.pj ~= nil and t.pj ~= presented then
    touch(now)
    return {reply('copied', token, t, s, now), ''}
end
t.pj = jti
put_ticket(token, t)
check_in(token, t, lease, s)
touch(now)
return {reply('ok', token, t, s, now), t.id or ''}
