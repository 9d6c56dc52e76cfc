"""The per-process cache of a room's figures (RoomCache): an admin's change holds from
the next request in every process, and names an outsider makes up never grow it."""

from __future__ import annotations

import pytest
from building import engine, lobby_of, visits_of
from busy import busy_room, turn_over
from recording import RecordingPublisher

from webapp.domain.rooms import JoinRefused, RoomNotFound


def worker(r, keys, clock):
    """Another process: its own engine and a lobby that would cache for an hour."""
    return lobby_of(engine(r, keys, clock), refresh=3600.0, monotonic=clock)


def test_a_settings_change_holds_at_the_next_join_in_another_process(
    r, keys, rooms, clock, reports
):
    """Another process set max_wait_seconds: this one's next join obeys it, not its cache."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=30)
    here = worker(r, keys, clock)
    assert here.join("busy").ticket.position == 2  # cached: no max_wait_seconds
    rooms.configure("busy", {"max_wait_seconds": 25})  # an admin, in another process
    with pytest.raises(JoinRefused):
        here.join("busy")
    assert reports.summary("busy").waiting == 2


def test_a_check_in_answers_with_the_new_settings(r, keys, rooms, clock):
    """A shorter dropout_seconds shortens the very next poll interval in every process."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 60})
    for _ in range(20):  # far back in line: the poll interval is the ceiling, dropout / 2
        rooms.join("hall")
    here = visits_of(engine(r, keys, clock), RecordingPublisher(), refresh=3600.0, monotonic=clock)
    token = here.lobby.join("hall").ticket.token
    assert here.check_in("hall", token).poll_after > 5
    rooms.configure("hall", {"dropout_seconds": 6})
    assert here.check_in("hall", token).poll_after <= 3


def test_two_admins_changing_different_settings_both_land(rooms):
    """Each change writes only its own fields: neither undoes the other."""
    rooms.configure("hall", {"capacity": 3})
    first = engine(rooms.client, rooms.keys, rooms.clock)
    first.configure("hall", {"grace_seconds": 40})
    rooms.configure("hall", {"status": "paused"})
    settings = rooms.find_settings("hall")
    assert (settings.capacity, settings.grace_seconds, settings.status) == (3, 40, "paused")


def test_made_up_room_names_are_not_cached(r, keys, clock):
    """Thousands of unknown names leave nothing behind in the process."""
    here = worker(r, keys, clock)
    for n in range(2000):
        with pytest.raises(RoomNotFound):
            here.join(f"made-up-{n}")
    assert len(here.reports.cache._figures) == 0


def test_the_cache_holds_at_most_its_size(r, keys, rooms, clock):
    """Real rooms beyond the size push out the least recently used."""
    here = lobby_of(rooms, refresh=3600.0, monotonic=clock, size=3)
    for n in range(5):
        rooms.configure(f"room-{n}", {"capacity": 1})
        here.join(f"room-{n}")
    assert list(here.reports.cache._figures) == ["room-2", "room-3", "room-4"]
