--!include room_base.lua
-- room_windows.lua: how long a waiting ticket may go without checking in (its check-in
-- window), by its distance from the head (issue 26, docs/scaling.md). Included by
-- room_lib.lua; never run alone.
--
-- Near the head the window is dropout_seconds. Further back it is a share (WINDOW_SHARE)
-- of the likely-earliest admission time, the estimate less its spread, at most the
-- room's max_checkin_seconds and never less than dropout_seconds. The earliest time is
-- a lower bound of the estimate's low end for `ahead` people in front,
--     low(ahead) = a * ahead - b * sqrt(ahead) + c
-- whose a, b, c the sweep works out from the room's measured pace
-- (webapp/domain/windows.py) and keeps in the clock hash's field "pace" as
-- "a b c until": after `until` (or with none) every window is dropout_seconds, the rule
-- of old. The window granted is the ticket's deadline (K_CHECKIN: lease + window) and
-- is kept on its record (t.w), so the time of its last check-in is known: due - w.
--
-- A ghost (someone who stopped checking in) is never offered a seat: only a ticket
-- whose last window was the head's (w <= dropout_seconds, so it checked in within the
-- last dropout_seconds) is. A ticket still on a longer window when the line reaches it
-- (the line moved faster than its low estimate) is passed over, not dropped: it keeps
-- its place at the front, and its next check-in (within its window) makes it the next
-- one offered a seat. So nobody who checks in within the window granted is dropped.

local WINDOW_SHARE = 0.5  -- of the likely-earliest admission time
local PASS_MAX = 20       -- tickets on a long window an offer looks past, at most

local PACE = nil     -- {a, b, c} while the hint is valid at this script's `now`
local GRANTED = {}   -- token -> the window this script granted it (reply()'s "window")
-- A check-in of this script brought a passed-over ticket back to the head's window:
-- free seats may now go to it (room_lib.lua woken(), before the batch's next ticket)
local WOKE = false

-- Reads the hint "a b c until" (the clock hash's "pace"), valid until `until`.
local function read_pace(raw, now)
    PACE = nil
    if not raw or raw == '' then
        return
    end
    local a, b, c, till = string.match(raw, '^(%S+) (%S+) (%S+) (%S+)$')
    a, b, c, till = tonumber(a), tonumber(b), tonumber(c), tonumber(till)
    if a and b and c and till and now <= till then
        PACE = {a, b, c}
    end
end

-- The window of a waiting ticket with `ahead` people in front, in whole seconds.
local function window_at(s, ahead)
    if not PACE or ahead <= 0 then
        return s.dropout
    end
    local low = PACE[1] * ahead - PACE[2] * math.sqrt(ahead) + PACE[3]
    local w = math.floor(WINDOW_SHARE * low)
    return math.max(s.dropout, math.min(s.max_checkin, w))
end

-- The window a waiting ticket is granted from where it stands (`ahead`: people in
-- front; nil: read), remembered for the reply. Under random order anyone in line may be
-- drawn at the next free seat, so everyone is granted the head's window.
local function grant(token, s, ahead)
    local w = s.dropout
    if PACE and s.method ~= 'random' then
        ahead = ahead or ahead_of(token) or 0
        w = window_at(s, ahead)
    end
    GRANTED[token] = w
    return w
end

-- Whether a waiting ticket, not overdue, may be offered a seat: its last window was
-- the head's. (A record from before windows grew has none: dropout_seconds.)
local function may_offer(t, s)
    return (t.w or s.dropout) <= s.dropout
end
