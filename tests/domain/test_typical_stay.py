"""typical_stay_seconds: an estimate from the first visitor on, until five stays are
measured (docs/estimates.md, "Before anything is measured")."""

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


def test_a_new_room_estimates_from_the_default_typical_stay(rooms, lobby):
    """The table's default typical stay (15 minutes) gives a new room's first in line a
    wait, labelled as resting on it."""
    rooms.configure("busy", {"capacity": 1})
    lobby.join("busy")
    first = lobby.join("busy")
    assert first.basis == "typical" and first.estimate is not None
    assert first.estimate.wait == pytest.approx(900.0)


def test_without_a_typical_stay_nothing_is_estimated_at_first(rooms, lobby):
    """The typical stay emptied and nothing measured: no wait and no basis."""
    rooms.configure("busy", {"capacity": 1, "typical_stay_seconds": None})
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


def test_measured_stays_take_over_from_the_typical_stay(rooms, lobby, visits, clock, reports):
    """Measured holds of 10 s against a typical stay of 900 s: once five are measured,
    the pace is the measured one alone (a default far off biases nothing), and the basis
    says so."""
    seated = busy_room(rooms, typical_stay_seconds=900)
    turn_over(rooms, clock, seated, hold=10, times=60)
    standing = visits.check_in("busy", reports.participants("busy")[-1].token)
    assert standing.ticket.seated
    rates = lobby.reports.cache.rates("busy", clock.now)
    assert rates is not None and rates.basis == "measured"
    measured = pace.rates(reports.stats("busy"), clock.now, 1)
    assert measured is not None
    assert rates.service == pytest.approx(measured.service)


def test_the_typical_stay_counts_only_before_five_holds():
    """Right at MIN_HOLDS the measured pace is the pace, whatever the typical stay."""
    now, n, hold = 1000.0, pace.MIN_HOLDS, 10.0
    stats = {"hold:n": n, "hold:s": n * hold, "hold:q": n * hold * hold, "hold:t": now}
    alone = pace.rates(stats, now, 1)
    with_typical = pace.rates(stats, now, 1, typical=30.0)
    assert alone is not None and with_typical is not None
    assert 1 / alone.service == pytest.approx(hold)
    assert with_typical == alone


def test_an_emailed_offer_ahead_counts_in_the_first_estimate(rooms, lobby):
    """Nothing measured, typical stay 120 s, one seat: of the two in line the first gave
    an email, so an offer holds its seat up to email_claim_seconds (180 s) for half the
    line, and the second waits two turns of 120 + 90 s, not of 120 s."""
    rooms.configure("busy", {"capacity": 1, "typical_stay_seconds": 120,
                             "email_claim_seconds": 180})  # fmt: skip
    lobby.join("busy")
    lobby.join("busy", email="ann@example.com")
    second = lobby.join("busy")
    assert second.ticket.ahead == 1 and second.basis == "typical"
    assert second.estimate is not None
    assert second.estimate.wait == pytest.approx(2 * (120 + 180 / 2))


def test_the_line_counts_who_gave_an_email(rooms, reports):
    """The count of emails follows the line: a join with one, an email given and
    removed, an admission and a leave from the line."""
    rooms.configure("busy", {"capacity": 1})
    seated = rooms.join("busy")
    ann = rooms.join("busy", email="ann@example.com")
    bob = rooms.join("busy")
    assert reports.stats("busy")["line:emails"] == 1
    assert reports.stats("busy")["line:waiting"] == 2
    rooms.set_email("busy", bob.token, "bob@example.com")
    rooms.set_email("busy", bob.token, "bob@example.org")  # a new address, still one
    assert reports.stats("busy")["line:emails"] == 2
    rooms.set_email("busy", bob.token, "")
    assert reports.stats("busy")["line:emails"] == 1
    rooms.set_email("busy", bob.token, "bob@example.com")
    rooms.leave("busy", bob.token)
    assert reports.stats("busy")["line:emails"] == 1
    rooms.leave("busy", seated.token)  # ann is offered the seat: out of the line
    assert rooms.check_in("busy", ann.token).state != "waiting"
    assert reports.stats("busy")["line:emails"] == 0
    assert pace.offer_hold(reports.stats("busy"), 180) == 0.0
