"""Reports.offers: the seats offered and not yet taken, for the room's page (issue 35)."""

from __future__ import annotations

import pytest

ROOM = "live"


def test_an_untaken_offer_is_counted_with_its_deadline(rooms, reports, clock):
    """A seat offered to the head of the line shows, with when it passes on; once taken
    it no longer does."""
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 30})
    first = rooms.join(ROOM)
    waiter = rooms.join(ROOM)
    assert reports.offers(ROOM) == (0, None)  # a held seat is no offer
    rooms.leave(ROOM, first.token)
    seats, ends = reports.offers(ROOM)
    assert seats == 1 and ends == pytest.approx(clock() + 30, abs=1)
    rooms.check_in(ROOM, waiter.token)  # taken
    assert reports.offers(ROOM) == (0, None)


def test_no_room_no_offers(reports):
    """An unknown or invalid room has none."""
    assert reports.offers("nowhere") == (0, None)
    assert reports.offers("not a room!") == (0, None)
