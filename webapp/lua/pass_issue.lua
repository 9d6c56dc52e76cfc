--!keys tickets
-- pass_issue.lua: a site room's seat remembers the pass it handed out last (issue 29),
-- so that only that pass renews it: a copied pass works for one holder past the next
-- renewal, however many copies exist. Handing one to the ticket's holder (the room's
-- page, the API) sets it; a renewal at the gate swaps it only for the pass presented,
-- if that is the last one handed out.
-- KEYS: tickets, the room's tickets (hash: ticket -> JSON record; the seat's pass is its "pj")
-- ARGV: 1 ticket, 2 the new pass's jti, 3 the jti presented for renewal ('' = handed to
--       the ticket's holder: no pass presented)
-- Reply: {code, the ticket's identity ('' = none)}; code 'ok' | 'gone' (no such live
--        ticket: nothing changed) | 'stale' (the presented pass is not the seat's last:
--        nothing changed)
local raw = redis.call('HGET', K_TICKETS, ARGV[1])
if not raw then
    return {'gone', ''}
end
local t = cjson.decode(raw)
if t.st == 'ended' then
    return {'gone', ''}
end
if ARGV[3] ~= '' and t.pj ~= nil and t.pj ~= ARGV[3] then
    return {'stale', ''}
end
t.pj = ARGV[2]
redis.call('HSET', K_TICKETS, ARGV[1], cjson.encode(t))
return {'ok', t.id or ''}
