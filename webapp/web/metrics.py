"""Prometheus metrics (docs/operations.md, "Metrics"). No Flask here: the blueprint is
in ``webapp/views/ops/metrics.py``; ``TimedRequests`` times every request at the WSGI layer.

``RoomCollector`` reads every room's figures from Redis at scrape time, so whichever
worker answers a scrape reports the same truth. The request figures live in each
process; under gunicorn with several workers, prometheus_client's multiprocess mode adds
them up across workers (``PROMETHEUS_MULTIPROC_DIR``, which ``webapp/web/gunicorn_conf.py``
sets up before forking). Without it, this process's own figures are served.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, values
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.multiprocess import MultiProcessCollector

from webapp.domain.refusals import GONE_REASONS
from webapp.domain.reports import Reports
from webapp.domain.settings import STATUSES
from webapp.redis.replies import text as _text

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

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

    def __init__(self, reports: Reports) -> None:
        self.reports = reports

    def figures(self) -> list[RoomFigures]:
        names = self.reports.names()
        if not names:
            return []
        pipe = self.reports.client.pipeline(transaction=False)
        for name in names:
            keys = self.reports.keys.room(name)
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

    def __init__(self, reports: Reports) -> None:
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
        self.registry.register(RoomCollector(reports))
        self._timers: dict[tuple[str, str, str], Any] = {}  # labels -> their histogram

    def observe(self, endpoint: str, method: str, status: str, seconds: float) -> None:
        """``status``: the response's status line ("200 OK")."""
        method = method if method in METHODS else "other"  # label values stay bounded
        labels = (endpoint, method, status[:1])
        timer = self._timers.get(labels)
        if timer is None:
            timer = self.latency.labels(endpoint, method, f"{status[:1]}xx")
            self._timers[labels] = timer
        timer.observe(seconds)

    def handshake(self) -> None:
        self.handshakes.inc()

    def exposition(self, accept: str) -> tuple[bytes, str]:
        """The scrape's body and content type (OpenMetrics when the scraper asks for it)."""
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type


ENDPOINT = "webapp.endpoint"  # the environ key a request answered without Flask is timed by


class TimedRequests:
    """WSGI middleware: times each request under its Flask endpoint ("unmatched" when no
    route matched: never the raw path), method and status class, and counts websocket
    handshakes instead of timing them (a socket's request lasts for hours).

    At the WSGI layer rather than in request hooks: a check-in is polled thousands of
    times a second, and two hooks with their context lookups cost several times the
    histogram itself (docs/performance.md). The time is until the app returns its
    response, as a hook would have seen it; the endpoint is read from the request Flask
    keeps in the environ while it answers."""

    def __init__(self, app: WSGIApplication, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("HTTP_UPGRADE", "").lower() == "websocket":
            self.metrics.handshake()
            return self.app(environ, start_response)
        started = time.perf_counter()
        status = endpoint = ""

        def remember(line: str, headers: Any, exc_info: Any = None) -> Any:
            nonlocal status, endpoint
            # Still inside the request: Flask drops its request from the environ after
            # (a middleware that answers without Flask names its endpoint in ENDPOINT)
            rule = getattr(environ.get("werkzeug.request"), "url_rule", None)
            named = environ.get(ENDPOINT) or (rule.endpoint if rule is not None else "")
            status, endpoint = line, named or "unmatched"
            return start_response(line, headers, exc_info)

        body = self.app(environ, remember)
        if status:
            method = environ.get("REQUEST_METHOD", "")
            self.metrics.observe(endpoint, method, status, time.perf_counter() - started)
        return body


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
