"""The background sweep: upkeep for rooms nobody polls, one process per interval."""

from __future__ import annotations

from building import engine, visits_of
from recording import RecordingPublisher

from webapp.domain.chat import room_chat_id
from webapp.domain.rooms import public_id
from webapp.domain.sweeper import Sweeper


def test_sweep_drops_waiters_nobody_polls(r, keys, clock, rooms, visits):
    """A sweep ends overdue waiters and admits the next in every room."""
    for name in ("one", "two"):
        rooms.configure(name, {"capacity": 1, "dropout_seconds": 10})
        seated = rooms.join(name)
        for _ in range(3):
            rooms.join(name)
        rooms.leave(name, seated.token)
    clock.advance(11)
    assert Sweeper(visits, interval=5).sweep_once() > 0
    for name in ("one", "two"):
        assert r.zcard(keys.room(name).line) == 0
        assert r.zcard(keys.room(name).seats) == 0


def test_one_sweeper_per_interval(r, keys, clock, rooms, visits):
    """Of several processes' sweepers, only one sweeps in each interval."""
    rooms.configure("one", {"capacity": 1, "dropout_seconds": 10})
    rooms.join("one")
    for _ in range(4):
        rooms.join("one")
    clock.advance(11)
    first, second = Sweeper(visits, interval=30), Sweeper(visits, interval=30)
    assert first.sweep_once() == 4
    assert r.pttl(keys.sweep_lock) > 0
    for _ in range(2):
        rooms.join("one")
    clock.advance(11)
    assert second.sweep_once() == 0  # the lock is still held: not this process's turn
    r.delete(keys.sweep_lock)
    assert second.sweep_once() == 2


def test_sweeper_thread_runs_by_itself(r, keys):
    """The sweeper thread sweeps on its own every interval (real time, Redis TIME)."""
    import time

    rooms = engine(r, keys)
    rooms.configure("one", {"capacity": 1, "dropout_seconds": 5})
    rooms.join("one")
    rooms.join("one")
    r.zadd(keys.room("one").checkin, {r.zrange(keys.room("one").line, 0, 0)[0]: 0}, xx=True)
    sweeper = Sweeper(visits_of(rooms, RecordingPublisher()), interval=0.05)
    sweeper.start()
    try:
        deadline = time.monotonic() + 5
        while r.zcard(keys.room("one").line) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        sweeper.stop()
    assert r.zcard(keys.room("one").line) == 0


def test_sweep_takes_the_seatless_out_of_the_chat(rooms, chats, visits, told, clock):
    """Whoever no longer holds a seat leaves the room's chat, so cleanup goes on."""
    rooms.configure("one", {"capacity": 2, "session_seconds": 60})
    stays, goes = rooms.join("one"), rooms.join("one")
    for ticket in (stays, goes):
        chats.join(room_chat_id("one"), public_id(ticket.token), clock.now)
    rooms.leave("one", goes.token)
    Sweeper(visits, interval=5).sweep_once()
    assert set(chats.members(room_chat_id("one"))) == {public_id(stays.token)}
    assert told.changed_rooms == ["one"]  # the room's open pages hear of it
