"""Many real processes joining and leaving at once agree on one truth in Redis."""

from __future__ import annotations

import json
import multiprocessing

import pytest
from building import engine_at

ROOM = "rush"
PROCESSES = 8
JOINS_EACH = 125
CAPACITY = 25


def _join_many(args: tuple[str, int, multiprocessing.synchronize.Barrier]) -> list[tuple]:
    url, count, barrier = args
    rooms = engine_at(url)
    barrier.wait()
    return [(t.token, t.state, t.position) for t in (rooms.join(ROOM) for _ in range(count))]


def _leave(args: tuple[str, str, multiprocessing.synchronize.Barrier]) -> None:
    url, token, barrier = args
    rooms = engine_at(url)
    barrier.wait()
    rooms.leave(ROOM, token)


@pytest.mark.slow
def test_many_processes_many_joins(redis_url, r):
    """8 processes x 125 joins at capacity 25: 25 admitted, positions 1..975 once each;
    then seats freed in a burst go strictly to the head of the line, in order."""
    rooms = engine_at(redis_url)
    rooms.configure(ROOM, {"capacity": CAPACITY, "dropout_seconds": 3600})
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as pool:
            results = pool.map(_join_many, [(redis_url, JOINS_EACH, barrier)] * PROCESSES)
        joined = [row for rows in results for row in rows]

        assert len(joined) == PROCESSES * JOINS_EACH
        admitted = [token for token, state, _ in joined if state == "admitted"]
        assert len(admitted) == CAPACITY
        positions = sorted(position for _, state, position in joined if state == "waiting")
        assert positions == list(range(1, PROCESSES * JOINS_EACH - CAPACITY + 1))

        keys = rooms.keys.room(ROOM)
        line_before = r.zrange(keys.line, 0, -1)
        burst = admitted[:PROCESSES]
        barrier = manager.Barrier(len(burst))
        with ctx.Pool(len(burst)) as pool:
            pool.map(_leave, [(redis_url, token, barrier) for token in burst])

    seated = set(r.zrange(keys.seats, 0, -1))
    newly = [token for token in line_before if token in seated]
    assert newly == line_before[: len(burst)]
    assert r.zrange(keys.line, 0, -1) == line_before[len(burst) :]
    seated_at = [json.loads(r.hget(keys.tickets, token))["a"] for token in newly]
    assert seated_at == sorted(seated_at)
    assert r.zcard(keys.seats) == CAPACITY
