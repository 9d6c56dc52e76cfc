"""The start burst of a scheduled drop with real processes: 500 in the pre-queue,
capacity 20, 8 processes checking in as waiting pages do, one sweeping as the
background sweep does (every second). Seats never exceed the capacity, every ticket
sees its place soon after starts_at, and the line's order is the draw's."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import pytest
import redis
from building import engine, visits_of
from recording import RecordingPublisher

from webapp.domain.draw import verify_draw
from webapp.domain.tickets import public_id

ROOM = "burst"
PEOPLE = 500
CAPACITY = 20
PROCESSES = 8
POLL = 0.5  # seconds between one process's rounds of check-ins
LEAD = 2  # seconds from when every process is up and polling to starts_at


def _visits(url: str) -> Any:
    client = redis.Redis.from_url(url, decode_responses=True)
    return visits_of(engine(client, sweep_every=1.0), RecordingPublisher(), refresh=1.0)


def _check_in(args: tuple[str, list[str], Any, Any, Any]) -> tuple[int, float, int]:
    """Checks each ticket in every POLL seconds until each has seen its place (a
    position or a seat) and the sale has run a while; (most seats seen, when the last
    place was first shown, places shown)."""
    url, tokens, ready, go, told = args
    visits = _visits(url)
    ready.wait()
    go.wait()
    starts_at = told["starts_at"]
    shown: dict[str, float] = {}
    most = 0
    deadline = starts_at + 20
    while time.time() < deadline and (len(shown) < len(tokens) or time.time() < starts_at + 3):
        for token in tokens:
            try:
                ticket = visits.check_in(ROOM, token).ticket
            except Exception:  # a dropped ticket: no place to show
                continue
            most = max(most, ticket.active)
            if token not in shown and (ticket.position > 0 or ticket.seated):
                shown[token] = time.time()
        time.sleep(POLL)
    return most, max(shown.values(), default=float("inf")), len(shown)


def _sweep(url: str, ready: Any, go: Any, told: Any) -> None:
    visits = _visits(url)
    ready.wait()
    go.wait()
    while time.time() < told["starts_at"] + 20:
        visits.sweep(ROOM)
        time.sleep(1.0)


@pytest.mark.slow
def test_start_burst_of_500(redis_url: str, r: Any) -> None:
    """500 pre-queued at capacity 20: every page shows its place within a few seconds of
    starts_at (one sweep interval and one poll), seats never over capacity."""
    visits = _visits(redis_url)
    now = time.time()
    visits.configure(
        ROOM,
        {"capacity": CAPACITY, "dropout_seconds": 120, "prequeue_at": int(now) - 1,
         "starts_at": int(now) + 3600},
    )  # fmt: skip
    tokens = [visits.join(ROOM, identity=f"p{i}").ticket.token for i in range(PEOPLE)]
    assert visits.drops.prequeued(ROOM) == PEOPLE
    ctx = multiprocessing.get_context("spawn")
    seats: list[int] = []
    with ctx.Manager() as manager:
        ready, go = manager.Barrier(PROCESSES + 2), manager.Barrier(PROCESSES + 2)
        told = manager.dict()
        sweeper = ctx.Process(target=_sweep, args=(redis_url, ready, go, told))
        sweeper.start()
        try:
            shares = [(redis_url, tokens[i::PROCESSES], ready, go, told) for i in range(PROCESSES)]
            with ctx.Pool(PROCESSES) as pool:
                pending = pool.map_async(_check_in, shares)
                ready.wait()  # every process is up: the start comes LEAD seconds from now
                starts_at = int(time.time()) + LEAD
                visits.configure(ROOM, {"starts_at": starts_at})
                told["starts_at"] = starts_at
                go.wait()
                while not pending.ready():
                    seats.append(r.zcard(visits.rooms.keys.room(ROOM).seats))
                    time.sleep(0.05)
                results = pending.get()
        finally:
            sweeper.terminate()
            sweeper.join()
    most = max(result[0] for result in results)
    last = max(result[1] for result in results)
    assert sum(result[2] for result in results) == PEOPLE
    assert most <= CAPACITY and max(seats) <= CAPACITY
    drawn_at = visits.drops.draw(ROOM).drawn_at or 0
    print(f"\nstart burst: {PEOPLE} pre-queued, capacity {CAPACITY}: drawn "
          f"{drawn_at - starts_at:.2f} s and last place shown {last - starts_at:.2f} s after "
          f"starts_at; most seats seen {most}, sampled {max(seats)}")  # fmt: skip
    assert last - starts_at < 1.0 + POLL + 2.5  # a sweep, a poll, and a busy machine's slack
    record = visits.drops.draw(ROOM)
    assert record.entries == PEOPLE
    line = r.zrange(visits.rooms.keys.room(ROOM).line, 0, -1)
    drawn = verify_draw(record.seed, [public_id(t) for t in tokens])
    assert visits.drops.drawn_ids(ROOM) == drawn
    in_line = [public_id(t) for t in line]
    assert in_line == [i for i in drawn if i in set(in_line)]
