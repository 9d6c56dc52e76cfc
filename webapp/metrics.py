"""Prometheus metrics (docs/operations.md, "Metrics"). No Flask here: the blueprint and
the request hooks are in ``webapp/views/metrics.py``.

``RoomCollector`` reads every room's figures from Redis at scrape time, so whichever
worker answers a scrape reports the same truth. The request figures live in each
process; under gunicorn with several workers, prometheus_client's multiprocess mode adds
them up across workers (``PROMETHEUS_MULTIPROC_DIR``, which ``webapp/gunicorn_conf.py``
sets up before forking). Without it, this process's own figures are served.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, values
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.multiprocess import MultiProcessCollector

from webapp.domain.rooms import GONE_REASONS, WaitingRooms
from webapp.domain.settings import STATUSES

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Metric)
PREFIX = "waitingroom_"
# room_lib.lua's WAIT_BUCKETS: "waits:le:<bound>" counts the waits in that bucket alone
WAIT_BOUNDS = ("5", "15", "30", "60", "120", "300", "600", "1200", "1800", "3600", "7200", "+Inf")
HELP = {
    "room_capacity": "Seats in the room",
    "room_seats_taken": "Seats held, or offered to the head of the line",
    "room_waiting": "People in the line",
    "room_status": "1 for the room's status (open, paused, closed), 0 for the others",
    "room_joined": "New joins: seated at once or put in the line",
    "room_admitted": "Seats given: at once on joining, or offered from the line",
    "room_ended": "Places and seats that ended, by reason",
    "room_wait_seconds": "Waits of the people offered a seat from the line, in seconds",
}
END_REASONS = tuple(GONE_REASONS)  # left, removed, dropped, unclaimed, grace, session
# The stats hash's monitoring fields (room_lib.lua, count and count_wait), not the
# decayed statistics beside them
STATS_FIELDS = (
    "count:joined",
    "count:admitted",
    *(f"count:ended_{why}" for why in END_REASONS),
    *(f"waits:le:{bound}" for bound in WAIT_BOUNDS),
    "waits:sum",
)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RoomFigures(NamedTuple):
    name: str
    capacity: int
    taken: int
    waiting: int
    status: str
    stats: dict[str, float]

    def counted(self, what: str) -> float:
        return self.stats.get(f"count:{what}", 0.0)

    def statuses(self) -> list[str]:
        """The three statuses, and the room's own should it be another."""
        return [*STATUSES, *([] if self.status in STATUSES else [self.status])]

    def wait_buckets(self) -> list[tuple[str, float]]:
        """The waits' buckets made cumulative, as Prometheus wants them."""
        total, buckets = 0.0, []
        for bound in WAIT_BOUNDS:
            total += self.stats.get(f"waits:le:{bound}", 0.0)
            buckets.append((bound if bound == "+Inf" else str(float(bound)), total))
        return buckets


class RoomCollector:
    """Every room's figures: one round trip for the room index, one pipeline for all."""

    def __init__(self, rooms: WaitingRooms) -> None:
        self.rooms = rooms

    def figures(self) -> list[RoomFigures]:
        names = self.rooms.names()
        if not names:
            return []
        pipe = self.rooms.client.pipeline(transaction=False)
        for name in names:
            keys = self.rooms.room_keys(name)
            pipe.hmget(keys.settings, "capacity", "status")
            pipe.zcard(keys.seats)
            pipe.zcard(keys.line)
            pipe.hmget(keys.stats, STATS_FIELDS)
        replies = pipe.execute()
        out = []
        for i, name in enumerate(names):
            (capacity, status), taken, waiting, stats = replies[4 * i : 4 * i + 4]
            if capacity is None:  # deleted since the index was read
                continue
            numbers = {f: float(v) for f, v in zip(STATS_FIELDS, stats, strict=True) if v}
            out.append(RoomFigures(name, int(capacity), taken, waiting, _text(status), numbers))
        return out

    def collect(self) -> Iterator[Metric]:
        capacity = _family(GaugeMetricFamily, "room_capacity")
        taken = _family(GaugeMetricFamily, "room_seats_taken")
        waiting = _family(GaugeMetricFamily, "room_waiting")
        status = _family(GaugeMetricFamily, "room_status", "status")
        joined = _family(CounterMetricFamily, "room_joined")
        admitted = _family(CounterMetricFamily, "room_admitted")
        ended = _family(CounterMetricFamily, "room_ended", "reason")
        waits = _family(HistogramMetricFamily, "room_wait_seconds")
        for figures in self.figures():
            name = figures.name
            capacity.add_metric([name], figures.capacity)
            taken.add_metric([name], figures.taken)
            waiting.add_metric([name], figures.waiting)
            for state in figures.statuses():
                status.add_metric([name, state], 1.0 if figures.status == state else 0.0)
            joined.add_metric([name], figures.counted("joined"))
            admitted.add_metric([name], figures.counted("admitted"))
            for reason in END_REASONS:
                ended.add_metric([name, reason], figures.counted(f"ended_{reason}"))
            waits.add_metric([name], figures.wait_buckets(), figures.stats.get("waits:sum", 0.0))
        yield from (capacity, taken, waiting, status, joined, admitted, ended, waits)


def _family(kind: Callable[..., F], name: str, *labels: str) -> F:
    """An empty family of per-room samples: ``PREFIX + name``, labelled by room."""
    return kind(PREFIX + name, HELP[name], labels=["room", *labels])


class Metrics:
    """What ``/metrics`` serves: the rooms' figures, request latency per endpoint, and
    websocket handshakes. One per app."""

    def __init__(self, rooms: WaitingRooms) -> None:
        # On no registry of their own: the scrape registry below takes them, or in
        # multiprocess mode reads what every worker wrote to the shared directory.
        self.latency = Histogram(
            f"{PREFIX}http_request_duration_seconds",
            "Time to answer a request, by Flask endpoint, method and status class",
            ["endpoint", "method", "status"],
            registry=None,
        )
        self.handshakes = Counter(
            f"{PREFIX}websocket_handshakes",
            "Room websocket handshakes begun (their long lives are not timed)",
            registry=None,
        )
        self.registry = CollectorRegistry()
        if multiprocess():
            MultiProcessCollector(self.registry)  # type: ignore[no-untyped-call]
        else:
            self.registry.register(self.latency)
            self.registry.register(self.handshakes)
        # Once, on the scrape registry: it reads Redis, which every worker shares.
        self.registry.register(RoomCollector(rooms))

    def observe(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "other"  # label values stay bounded
        self.latency.labels(endpoint, method, f"{status // 100}xx").observe(seconds)

    def handshake(self) -> None:
        self.handshakes.inc()

    def exposition(self, accept: str) -> tuple[bytes, str]:
        """The scrape's body and content type (OpenMetrics when the scraper asks for it)."""
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type


def multiprocess() -> bool:
    """Whether the workers share request figures through PROMETHEUS_MULTIPROC_DIR."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return False
    # prometheus_client picks its value store once, on import: imported before the
    # variable was set (gunicorn --preload), each process still counts alone.
    if not getattr(values.ValueClass, "_multiprocess", False):
        log.warning(
            "prometheus_client was imported before PROMETHEUS_MULTIPROC_DIR was set; "
            "each worker reports only its own requests"
        )
        return False
    return True


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
