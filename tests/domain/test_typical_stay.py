"""typical_stay_seconds: an estimate from the first visitor on, blending into the measured
one (docs/estimates.md, "Before anything is measured")."""

from __future__ import annotations

import pytest
from busy import busy_room, turn_over

from webapp.domain import pace


def test_first_in_line_sees_a_wait_from_the_typical_stay(rooms, lobby):
    """Nothing measured, typical stay 120 s, 2 seats full: the first in line waits ~60 s."""
    rooms.configure("busy", {"capacity": 2, "typical_stay_seconds": 120})
    lobby.join("busy")
    lobby.join("busy")
    first = lobby.join("busy")
    assert first.ticket.position == 1
    assert first.basis == "typical"
    assert first.estimate is not None
    assert first.estimate.wait == pytest.approx(60.0)
    assert first.estimate.spread > 0  # a guess is shown as a range


def test_without_a_typical_stay_nothing_is_estimated_at_first(rooms, lobby):
    """No typical stay and nothing measured: no wait and no basis."""
    rooms.configure("busy", {"capacity": 1})
    lobby.join("busy")
    first = lobby.join("busy")
    assert first.estimate is None
    assert first.basis is None


def test_paused_room_has_no_basis(rooms, lobby):
    """Nobody is let in from a paused room: no wait, whatever the typical stay."""
    rooms.configure("busy", {"capacity": 1, "typical_stay_seconds": 60, "status": "paused"})
    lobby.join("busy")
    waiting = lobby.join("busy")
    assert waiting.estimate is None
    assert waiting.basis is None


def test_measured_stays_take_over_from_the_typical_stay(rooms, lobby, clock, reports):
    """Measured holds of 10 s against a typical stay of 30 s: once many are measured,
    the pace is the measured one and the basis says so."""
    seated = busy_room(rooms, typical_stay_seconds=30)
    turn_over(rooms, clock, seated, hold=10, times=60)
    standing = lobby.check_in("busy", reports.participants("busy")[-1].token)
    assert standing.ticket.seated
    rates = lobby.rates("busy", clock.now)
    assert rates is not None and rates.basis == "measured"
    measured = pace.rates(reports.stats("busy"), clock.now, 1)
    assert measured is not None
    turn_blended, turn_measured = 1 / rates.service, 1 / measured.service
    assert turn_measured < turn_blended < 30
    assert turn_blended < 1.5 * turn_measured  # the typical stay has faded


def test_blend_weighs_the_typical_stay_as_a_few_holds():
    """Right at MIN_HOLDS the typical stay and the measured pace count about alike."""
    now, n, hold = 1000.0, pace.MIN_HOLDS, 10.0
    stats = {"hold:n": n, "hold:s": n * hold, "hold:q": n * hold * hold, "hold:t": now}
    alone = pace.rates(stats, now, 1)
    blended = pace.rates(stats, now, 1, typical=30.0)
    assert alone is not None and blended is not None
    assert 1 / alone.service == pytest.approx(hold)
    assert 1 / blended.service == pytest.approx((n * hold + pace.TYPICAL_WEIGHT * 30) / 10)
