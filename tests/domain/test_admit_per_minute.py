"""admit_per_minute (issue 23): at most that many admissions in a clock minute, exact
when many processes join, leave and check in at once, whichever script admits."""

from __future__ import annotations

import multiprocessing

from building import engine_at

ROOM = "paced"
PROCESSES = 8
JOINS_EACH = 20
PER_MINUTE = 13


def _join_many(args: tuple[str, int, multiprocessing.synchronize.Barrier]) -> list[str]:
    url, count, barrier = args
    rooms = engine_at(url)
    barrier.wait()
    return [rooms.join(ROOM).state for _ in range(count)]


def test_joins_at_once_admit_exactly_the_minutes_share(redis_url, r):
    """8 processes x 20 joins in one minute, 100 seats, admit_per_minute 13: exactly
    13 admitted; the rest wait with seats free."""
    rooms = engine_at(redis_url)
    rooms.configure(ROOM, {"capacity": 100, "admit_per_minute": PER_MINUTE,
                           "dropout_seconds": 3600})  # fmt: skip
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as pool:
            states = [
                s
                for rows in pool.map(_join_many, [(redis_url, JOINS_EACH, barrier)] * PROCESSES)
                for s in rows
            ]
    admitted = states.count("admitted")
    keys = rooms.keys.room(ROOM)
    # a minute boundary may fall inside the burst: then two minutes' shares, each exact
    minutes = {k: int(v) for k, v in r.hgetall(keys.history).items() if k.endswith(":admitted")}
    assert all(count <= PER_MINUTE for count in minutes.values())
    assert admitted == sum(minutes.values())
    assert admitted in (PER_MINUTE, 2 * PER_MINUTE)
    assert r.zcard(keys.seats) == admitted
    assert r.zcard(keys.line) == PROCESSES * JOINS_EACH - admitted


def test_the_next_minute_lets_the_line_in(rooms, clock, r):
    """Seats freed by leaves are not refilled past the minute's share; the sweep of the
    next minute lets the next share in."""
    clock.advance(60 - clock() % 60)
    rooms.configure(ROOM, {"capacity": 3, "admit_per_minute": 3, "dropout_seconds": 3600})
    tickets = [rooms.join(ROOM) for _ in range(6)]
    assert [t.state for t in tickets] == ["admitted"] * 3 + ["waiting"] * 3
    rooms.leave(ROOM, tickets[0].token)
    keys = rooms.keys.room(ROOM)
    assert r.zcard(keys.seats) == 2  # the freed seat waits for the next minute
    clock.advance(60)
    rooms.sweep(ROOM)
    assert r.zcard(keys.seats) == 3 and r.zcard(keys.line) == 2
