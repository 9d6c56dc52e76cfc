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

from webapp.domain.join_refusals import REASONS as REFUSAL_REASONS
from webapp.domain.refusals import GONE_REASONS
from webapp.domain.reports import Reports
from webapp.domain.settings import STATUSES
from webapp.domain.webhooks import Webhooks
from webapp.redis.keys import Keys
from webapp.redis.replies import text as _text

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Metric)
PREFIX = "waitingroom_"
# room_lib.lua's WAIT_BUCKETS: "waits:le:<bound>" counts the waits in that bucket alone
WAIT_BOUNDS = ("5", "15", "30", "60", "120", "300", "600", "1200", "1800", "3600", "7200", "+Inf")
# room_stats.lua's ERROR_BUCKETS: "estimates:le:<bound>", the estimates' absolute errors
ERROR_BOUNDS = ("15", "30", "60", "120", "300", "600", "1800", "+Inf")
# The work a puzzle asks (its largest counter) and the tries a solution took
PUZZLE_BUCKETS = (1e3, 5e3, 1e4, 5e4, 1e5, 5e5, 1e6, 5e6, float("inf"))
GATE_RESULTS = ("fresh", "renewed", "refused")
MAIL_STATES = ("sent", "retry", "failed", "skipped")  # mail_done.lua's counts (deliveries hash)
MAIL_GROUP = "mailer"  # the mailer's consumer group of an outbox (webapp/workers/mailer.py GROUP)
HELP = {
    "room_capacity": "Seats in the room",
    "room_seats_taken": "Seats held, or offered to the head of the line",
    "room_waiting": "People in the line",
    "room_status": "1 for the room's status (open, paused, closed), 0 for the others",
    "room_joined": "New joins: seated at once or put in the line",
    "room_admitted": "Seats given: at once on joining, or offered from the line",
    "room_ended": "Places and seats that ended, by reason",
    "room_wait_seconds": "Waits of the people offered a seat from the line, in seconds",
    "room_refused": "Joins refused, by reason and the status the client was answered with",
    "room_estimate_error_seconds": "How far the wait told at the join was from the actual "
    "wait, for each admission from the line, in seconds",
    "room_estimates_in_range": "Admissions from the line whose actual wait fell in the range "
    "told at the join",
    "mail_outbox_depth": "Notices in the room's mail outbox not yet sent or given up",
    "mail_notices": "The room's notices by delivery state now (sent, retry, failed, skipped)",
    "pass_revocations": "Seat passes the gate refuses now (revocations in force)",
    "redis_script_calls": "Lua script calls Redis ran (EVAL, EVALSHA), by command",
    "redis_script_seconds": "Time Redis spent running Lua scripts, by command",
    "redis_script_failures": "Lua script calls that failed in Redis, by command",
    "redis_error_replies": "Error replies Redis sent to any client",
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
    *(f"count:refused_{why}" for why in REFUSAL_REASONS),
    "estimates:scored",
    "estimates:in_range",
    *(f"estimates:le:{bound}" for bound in ERROR_BOUNDS),
    "estimates:sum",
)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RoomFigures(NamedTuple):
    name: str
    capacity: int
    taken: int
    waiting: int
    status: str
    stats: dict[str, float]
    outbox: float = 0.0  # notices not yet done (mail_outbox_depth)
    mail: tuple[float, ...] = ()  # notices by state now, as MAIL_STATES

    def counted(self, what: str) -> float:
        return self.stats.get(f"count:{what}", 0.0)

    def statuses(self) -> list[str]:
        """The three statuses, and the room's own should it be another."""
        return [*STATUSES, *([] if self.status in STATUSES else [self.status])]

    def wait_buckets(self) -> list[tuple[str, float]]:
        """The waits' buckets made cumulative, as Prometheus wants them."""
        return self._cumulative("waits", WAIT_BOUNDS)

    def error_buckets(self) -> list[tuple[str, float]]:
        """The estimates' errors' buckets, cumulative."""
        return self._cumulative("estimates", ERROR_BOUNDS)

    def _cumulative(self, figure: str, bounds: tuple[str, ...]) -> list[tuple[str, float]]:
        total, buckets = 0.0, []
        for bound in bounds:
            total += self.stats.get(f"{figure}:le:{bound}", 0.0)
            buckets.append((bound if bound == "+Inf" else str(float(bound)), total))
        return buckets


class RoomCollector:
    """Every room's figures: one round trip for the room index, one pipeline for all,
    and what Redis itself says of the scripts it ran."""

    def __init__(self, reports: Reports) -> None:
        self.reports = reports
        self.keys: Keys = reports.keys

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
            pipe.xlen(keys.outbox)
            pipe.hmget(self.keys.deliveries(name), [f"#{state}" for state in MAIL_STATES])
        replies = pipe.execute()
        rows = [replies[6 * i : 6 * i + 6] for i in range(len(names))]
        groups = self._mail_groups([n for n, row in zip(names, rows, strict=True) if row[4]])
        out = []
        for name, row in zip(names, rows, strict=True):
            (capacity, status), taken, waiting, stats, length, mail = row
            if capacity is None:  # deleted since the index was read
                continue
            numbers = {f: float(v) for f, v in zip(STATS_FIELDS, stats, strict=True) if v}
            out.append(
                RoomFigures(
                    name,
                    int(capacity),
                    taken,
                    waiting,
                    _text(status),
                    numbers,
                    outbox=_outbox_depth(length, groups.get(name)),
                    mail=tuple(float(v or 0) for v in mail),
                )
            )
        return out

    def _mail_groups(self, names: list[str]) -> dict[str, Any]:
        """The mailer's consumer group of each room with an outbox (XINFO GROUPS: read
        only where the stream exists, so a scrape causes no error reply)."""
        if not names:
            return {}
        pipe = self.reports.client.pipeline(transaction=False)
        for name in names:
            pipe.xinfo_groups(self.keys.room(name).outbox)
        found = pipe.execute(raise_on_error=False)  # a stream gone since: an error here
        return {
            name: next((g for g in reply if _text(g.get("name", "")) == MAIL_GROUP), None)
            for name, reply in zip(names, found, strict=True)
            if isinstance(reply, list)
        }

    def collect(self) -> Iterator[Metric]:
        capacity = _family(GaugeMetricFamily, "room_capacity")
        taken = _family(GaugeMetricFamily, "room_seats_taken")
        waiting = _family(GaugeMetricFamily, "room_waiting")
        status = _family(GaugeMetricFamily, "room_status", "status")
        joined = _family(CounterMetricFamily, "room_joined")
        admitted = _family(CounterMetricFamily, "room_admitted")
        ended = _family(CounterMetricFamily, "room_ended", "reason")
        waits = _family(HistogramMetricFamily, "room_wait_seconds")
        refused = _family(CounterMetricFamily, "room_refused", "reason", "code")
        errors = _family(HistogramMetricFamily, "room_estimate_error_seconds")
        in_range = _family(CounterMetricFamily, "room_estimates_in_range")
        outbox = _family(GaugeMetricFamily, "mail_outbox_depth")
        mail = _family(GaugeMetricFamily, "mail_notices", "state")
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
            for reason, code in REFUSAL_REASONS.items():
                refused.add_metric([name, reason, str(code)], figures.counted(f"refused_{reason}"))
            errors.add_metric(
                [name], figures.error_buckets(), figures.stats.get("estimates:sum", 0.0)
            )
            in_range.add_metric([name], figures.stats.get("estimates:in_range", 0.0))
            outbox.add_metric([name], figures.outbox)
            for state, count in zip(MAIL_STATES, figures.mail, strict=True):
                mail.add_metric([name, state], count)
        yield from (capacity, taken, waiting, status, joined, admitted, ended, waits, refused,
                    errors, in_range, outbox, mail)  # fmt: skip
        yield from self.server()

    def server(self) -> Iterator[Metric]:
        """The passes revoked now, and Redis's own count of script calls, their time
        and failures (``INFO commandstats``: since Redis started or its stats were
        reset), and of its error replies."""
        client = self.reports.client
        revoked = client.zcount(self.keys.revoked_passes, time.time(), "+inf")
        commands: dict[str, dict[str, float]] = {}
        for node in _nodes(client.info("commandstats")):  # a cluster: every node's
            for name, figures in node.items():
                if name.removeprefix("cmdstat_").startswith(("eval", "fcall")):
                    mine = commands.setdefault(name.removeprefix("cmdstat_"), {})
                    for figure in ("calls", "usec", "failed_calls"):
                        mine[figure] = mine.get(figure, 0) + figures.get(figure, 0)
        errors = sum(node.get("total_error_replies", 0) for node in _nodes(client.info("stats")))
        gauge = GaugeMetricFamily(PREFIX + "pass_revocations", HELP["pass_revocations"])
        gauge.add_metric([], revoked)
        calls, seconds, failed = (
            CounterMetricFamily(PREFIX + name, HELP[name], labels=["command"])
            for name in ("redis_script_calls", "redis_script_seconds", "redis_script_failures")
        )
        for command, figures in commands.items():
            calls.add_metric([command], figures["calls"])
            seconds.add_metric([command], figures["usec"] / 1e6)
            failed.add_metric([command], figures["failed_calls"])
        replies = CounterMetricFamily(PREFIX + "redis_error_replies", HELP["redis_error_replies"])
        replies.add_metric([], errors)
        yield from (gauge, calls, seconds, failed, replies)


def _nodes(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """INFO's answer per node: one dict from a server, one per node from a cluster."""
    if reply and all(isinstance(v, dict) and ":" in k for k, v in reply.items()):
        return list(reply.values())
    return [reply]


def _outbox_depth(length: int, group: Any) -> float:
    """The notices the mailer has not finished: its group's pending ones and those it
    has not read yet; the whole stream while no mailer has read it (no group yet)."""
    if not length or group is None:
        return float(length or 0)
    lag = group.get("lag")  # None when Redis cannot tell (entries trimmed): all unread
    return float(group.get("pending", 0)) + float(length if lag is None else lag)


class WebhookCollector:
    """The webhooks' outbox, read from Redis at scrape time (every endpoint's counts
    added up; ``webapp.domain.webhooks``), named as the dashboard reads them."""

    def __init__(self, webhooks: Webhooks) -> None:
        self.webhooks = webhooks

    def collect(self) -> Iterator[Metric]:
        f = self.webhooks.figures()
        depth = GaugeMetricFamily(
            PREFIX + "webhook_outbox_depth", "Webhook deliveries not yet delivered or failed"
        )
        depth.add_metric([], f.pending)
        tries = CounterMetricFamily(
            PREFIX + "webhook_deliveries",
            "Webhook tries by outcome: delivered, failed (given up after 24 h), retry",
            labels=["result"],
        )
        tries.add_metric(["delivered"], f.delivered)
        tries.add_metric(["failed"], f.failed)
        tries.add_metric(["retry"], f.retry)
        seconds = HistogramMetricFamily(
            PREFIX + "webhook_delivery_seconds",
            "Time from an event to its receiver's 2xx, in seconds",
        )
        seconds.add_metric([], f.buckets, f.seconds)
        yield from (depth, tries, seconds)


def _family(kind: Callable[..., F], name: str, *labels: str) -> F:
    """An empty family of per-room samples: ``PREFIX + name``, labelled by room."""
    return kind(PREFIX + name, HELP[name], labels=["room", *labels])


class Metrics:
    """What ``/metrics`` serves: the rooms' figures, request latency per endpoint,
    websocket handshakes, the gate's answers, puzzles, and requests Redis failed. One
    per app; the domain's ``PuzzleTally`` (``Challenges`` tells it of puzzles)."""

    def __init__(self, reports: Reports, webhooks: Webhooks | None = None) -> None:
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
        self.gate_checks = Counter(
            f"{PREFIX}gate_checks",
            "The gate's answers to a pass: fresh (no Redis), renewed (the seat renewed, a new "
            "pass), refused (no pass, a bad or revoked one, the seat gone)",
            ["result"],
            registry=None,
        )
        for result in GATE_RESULTS:  # each shown from the start, at 0
            self.gate_checks.labels(result)
        self._gate = {result: self.gate_checks.labels(result) for result in GATE_RESULTS}
        self.puzzles_issued = Histogram(
            f"{PREFIX}puzzle_cost",
            "Puzzles handed out, by the work each asks (its largest counter)",
            ["room"],
            buckets=PUZZLE_BUCKETS,
            registry=None,
        )
        self.puzzles_solved = Histogram(
            f"{PREFIX}puzzle_solved_tries",
            "Puzzles solved and redeemed for a join, by the tries the solution took (its counter)",
            ["room"],
            buckets=PUZZLE_BUCKETS,
            registry=None,
        )
        self.redis_errors = Counter(
            f"{PREFIX}redis_errors",
            "Requests answered 503 because Redis was unreachable or failed",
            registry=None,
        )
        self.registry = CollectorRegistry()
        if multiprocess():
            MultiProcessCollector(self.registry)  # type: ignore[no-untyped-call]
        else:
            for mine in (self.latency, self.handshakes, self.gate_checks, self.puzzles_issued,
                         self.puzzles_solved, self.redis_errors):  # fmt: skip
                self.registry.register(mine)
        # Once, on the scrape registry: it reads Redis, which every worker shares.
        self.registry.register(RoomCollector(reports))
        if webhooks is not None:
            self.registry.register(WebhookCollector(webhooks))
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

    def gate(self, result: str) -> None:
        """One gate check: fresh, renewed or refused."""
        self._gate[result].inc()

    def puzzle_issued(self, room: str, cost: int) -> None:
        self.puzzles_issued.labels(room).observe(cost)

    def puzzle_solved(self, room: str, tries: int) -> None:
        self.puzzles_solved.labels(room).observe(tries)

    def redis_error(self) -> None:
        self.redis_errors.inc()

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
