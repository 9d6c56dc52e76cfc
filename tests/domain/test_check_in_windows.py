"""Check-in windows on the sweep and the lobby (issue 26): the sweep keeps the room's
pace hint, check-ins far back are granted long windows and told to poll dropout_seconds
before they end (half of them where that is sooner), the head keeps dropout_seconds,
and a stale hint falls back to the old rule."""

from __future__ import annotations

from webapp.domain import windows


def fill(visits, room, people):
    visits.configure(room, {"capacity": 1, "typical_stay_seconds": 60})
    return [visits.join(room).ticket.token for _ in range(people)]


def test_the_sweep_hints_the_pace_and_far_back_polls_come_rarely(visits, clock, r, rooms):
    """Far back a check-in is granted a long window (capped) and polls dropout_seconds
    before it ends; the head keeps dropout_seconds."""
    tokens = fill(visits, "big", 400)
    visits.sweep("big")
    assert r.hget(rooms.keys.room("big").clock, "pace")
    head, middle, back = (visits.check_in("big", t) for t in (tokens[1], tokens[20], tokens[-1]))
    assert head.ticket.window == 30 and head.poll_after <= 15
    assert 30 < middle.ticket.window < 300
    assert middle.poll_after == max(middle.ticket.window - 30, middle.ticket.window / 2)
    assert back.ticket.window == 300 and back.poll_after == 270  # the window less 30 s
    due = rooms.client.zscore(rooms.keys.room("big").checkin, tokens[-1])
    assert due == back.ticket.now + 300


def test_a_stale_hint_falls_back_to_dropout(visits, clock):
    """Without a sweep to renew it, the hint lapses and every window is dropout's."""
    tokens = fill(visits, "quiet", 50)
    visits.sweep("quiet")
    granted = [visits.check_in("quiet", t).ticket.window for t in tokens[1:]]
    assert granted[-1] > windows.HINT_VALID + 1
    clock.advance(windows.HINT_VALID + 1)
    standing = visits.check_in("quiet", tokens[-1])
    assert standing.ticket.position > 10
    assert standing.ticket.window == 30 and standing.poll_after <= 15


def test_max_checkin_caps_the_window(visits):
    """An admin's max_checkin_seconds is the longest window granted."""
    tokens = fill(visits, "capped", 400)
    visits.configure("capped", {"max_checkin_seconds": 90})
    visits.sweep("capped")
    assert visits.check_in("capped", tokens[-1]).ticket.window == 90
