"""The lease clock: time in which no room script ran, although the sweep promised one
every interval (Redis down, restarting or frozen), ends nobody's seat or place."""

from __future__ import annotations

import pytest
from building import engine

from webapp.domain.rooms import TicketGone

EVERY = 1.0  # the sweep's interval


@pytest.fixture
def rooms(r, keys, clock):
    """The engine as the app runs it: a sweep settles every room every second."""
    return engine(r, keys, clock, sweep_every=EVERY)


def sweep_for(rooms, clock, seconds):
    """The background sweep running normally for ``seconds``."""
    for _ in range(int(seconds / EVERY)):
        clock.advance(EVERY)
        rooms.sweep("hall")


def full_hall(rooms):
    """A seated member with a live socket (hold 20 s) and one visitor in line."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 10, "grace_seconds": 15})
    member = rooms.join("hall").token
    rooms.presence("hall", member, "open", hold=20)
    waiter = rooms.join("hall").token
    return member, waiter


@pytest.mark.parametrize("outage", [20, 60, 130])
def test_an_outage_ends_no_seat_and_no_place(rooms, clock, outage):
    """Nothing ran for longer than every bound: the seat and the place are both kept."""
    member, waiter = full_hall(rooms)
    sweep_for(rooms, clock, 3)
    clock.advance(outage)  # Redis unreachable: no beat, no check-in, no sweep lands
    rooms.sweep("hall")  # back: the first script skips the gap
    assert rooms.presence("hall", member, "beat", hold=20).state == "admitted"
    assert rooms.check_in("hall", waiter).position == 1


def test_someone_who_left_during_the_outage_frees_the_seat_after_the_normal_bound(rooms, clock):
    """A socket that closed just before the outage holds the seat for grace after it."""
    member, waiter = full_hall(rooms)
    rooms.presence("hall", member, "close")  # the page closed: grace is 15 s
    sweep_for(rooms, clock, 5)
    clock.advance(60)  # the outage
    rooms.sweep("hall")
    rooms.check_in("hall", waiter)
    sweep_for(rooms, clock, 9)  # 5 + 1 + 9 = 15 s of the grace have run
    assert rooms.check_in("hall", waiter).state == "waiting"
    sweep_for(rooms, clock, 2)
    assert rooms.check_in("hall", waiter).seated  # let in: the seat was freed
    with pytest.raises(TicketGone) as gone:
        rooms.check_in("hall", member)
    assert gone.value.why == "grace"


def test_quiet_time_counts_as_usual_while_the_sweep_runs(rooms, clock):
    """No outage: a waiter who stops checking in drops out after dropout_seconds."""
    _member, waiter = full_hall(rooms)
    sweep_for(rooms, clock, 9)
    assert rooms.check_in("hall", waiter).state == "waiting"
    sweep_for(rooms, clock, 11)
    with pytest.raises(TicketGone) as gone:
        rooms.check_in("hall", waiter)
    assert gone.value.why == "dropped"


def test_without_a_sweep_every_gap_counts(r, keys, clock):
    """With no sweep (sweep_every None) quiet cannot be told from an outage: time counts."""
    rooms = engine(r, keys, clock)
    _member, waiter = full_hall(rooms)
    clock.advance(60)
    with pytest.raises(TicketGone):
        rooms.check_in("hall", waiter)


def test_no_room_gets_a_clock_before_it_exists(rooms, r, keys):
    """Scripts on made-up room names write nothing (no key for an outsider's name)."""
    for name in ("nope", "made-up-1", "made-up-2"):
        with pytest.raises(Exception, match="no room"):
            rooms.join(name)
        rooms.sweep(name)
    assert r.keys(f"{keys.prefix}:*") == []
