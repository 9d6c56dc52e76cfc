"""The planner against the engine (issue 34): a small drop planned, then run on the
engine with the test's clock, visitors checking in when told, leaving when their stay
is over; the plan's median and 90th percentile waits within 20% of the run's."""

from __future__ import annotations

import heapq
import json
import math
from typing import Any

import pytest

from webapp.domain.planner import PlanInput, simulate

ROOM = "drop"


def replay(
    visits: Any, lobby: Any, rooms: Any, clock: Any, joins: list[float], stay: float
) -> list[float]:
    """Each of ``joins`` (seconds from now) joins, checks in at every ``poll_after``,
    and leaves ``stay`` seconds after being offered the seat; the sweep runs every
    second. Returns each one's wait from joining to the offer of a seat."""
    start, order, waits = clock.now, 0, []
    events: list[tuple[float, int, str, Any]] = []

    def at(when: float, kind: str, data: Any = None) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (when, order, kind, data))

    for t in joins:
        at(start + t, "join")
    at(start, "sweep")
    tickets = rooms.room_keys(ROOM).tickets
    while any(kind != "sweep" for _, _, kind, _ in events):
        when, _, kind, data = heapq.heappop(events)
        clock.now = max(clock.now, when)
        if kind == "sweep":
            visits.sweep(ROOM)
            at(clock.now + 1, "sweep")
            continue
        if kind == "leave":
            rooms.leave(ROOM, data)
            continue
        if kind == "join":
            standing = lobby.join(ROOM)
            token, joined = standing.ticket.token, clock.now
        else:
            token, joined = data
            standing = visits.check_in(ROOM, token)
        if standing.ticket.seated:
            offered = float(json.loads(rooms.client.hget(tickets, token))["a"])
            waits.append(offered - joined)
            at(max(clock.now, offered + stay), "leave", token)
        else:
            at(clock.now + standing.poll_after, "poll", (token, joined))
    return sorted(waits)


def nearest_rank(waits: list[float], q: float) -> float:
    """The q-quantile as the plan counts it: the smallest wait with q of them at or under."""
    return waits[max(math.ceil(q * len(waits)) - 1, 0)]


def test_the_plan_of_a_small_drop_matches_the_engine(visits, lobby, rooms, clock):
    """Capacity 5, stays of 10 s, 60 arrive at once: the plan's p50 and p90 within 20%
    of the engine's run."""
    rooms.configure(ROOM, {"capacity": 5, "dropout_seconds": 30, "typical_stay_seconds": 10})
    waits = replay(visits, lobby, rooms, clock, [0.0] * 60, stay=10)
    assert len(waits) == 60
    plan = simulate(PlanInput(arrivals=((0, 60),), capacity=5, stay_seconds=10, stay_cs2=0))
    assert plan.waits.p50 == pytest.approx(nearest_rank(waits, 0.5), rel=0.2)
    assert plan.waits.p90 == pytest.approx(nearest_rank(waits, 0.9), rel=0.2)
