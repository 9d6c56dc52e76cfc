"""The webhook worker (issue 31): ``python -m webapp.workers.webhooks`` (the Procfile's
``webhooks:`` line; ``make run`` starts it beside gunicorn and the mailer). No Flask.

Each round, for every room: the events its scripts wrote (the room's events stream,
read through the consumer group ``webhooks``) go into the outbox of every enabled
endpoint that takes them (``Webhooks.enqueue``: once per webhook-id), and only then
are they acknowledged, so a worker killed between the two queues them again and
nothing is lost. Then, for every enabled endpoint, the deliveries due now are claimed
(a lease: a worker killed mid-send leaves them due again when it ends) and POSTed by a
pool of threads, each outcome recorded by ``Webhooks.finish``. The consumer's name is
the host's: a worker restarted on the same host reads what it had read and not yet
queued first, so one ticket's events keep their order.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import redis
import urllib3

from webapp import config
from webapp.domain.clock import Clock
from webapp.domain.webhooks import (
    SEND_TIMEOUT,
    Delivery,
    Endpoint,
    Event,
    Try,
    Webhooks,
    event_body,
    headers,
    webhook_id,
)
from webapp.infra import logs
from webapp.redis.replies import text, texts

log = logging.getLogger("webapp.workers.webhooks")
GROUP = "webhooks"
FLAG_EVERY = 5.0  # seconds between checks that every room's flag is right
READ = 500  # events read from one room's stream per round
FAN_OUT = 100  # events put in an endpoint's outbox by one script call
IN_FLIGHT = 32  # deliveries of one endpoint being sent at once, at most
USER_AGENT = "waiting-room-webhooks/1"
REDIS_START = 30.0  # seconds the app's Redis may take to answer at start, quietly


class WebhookWorker:
    """Moves every room's events into the endpoints' outboxes and sends them."""

    def __init__(
        self,
        webhooks: Webhooks,
        clock: Clock,
        worker: str = "",
        lease: float = 30.0,
        poll: float = 0.05,
        threads: int = 16,
    ) -> None:
        self.webhooks = webhooks
        self.client = webhooks.client
        self.keys = webhooks.keys
        self.clock = clock
        self.worker = worker or socket.gethostname()
        self.lease = lease
        self.poll = poll
        self.http = urllib3.PoolManager(
            num_pools=64,
            maxsize=threads,
            retries=False,
            timeout=urllib3.Timeout(total=SEND_TIMEOUT),
            headers={"user-agent": USER_AGENT},
        )
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="webhook")
        self._groups: set[str] = set()
        self._flagged = 0.0
        self._claiming = False  # this round also takes over a dead host's read events
        self._sending: dict[str, int] = {}  # endpoint id -> deliveries being sent
        self._tried: dict[str, list[tuple[Endpoint, Try]]] = {}  # ended, not yet recorded
        self._wake = threading.Event()  # a try ended
        self._lock = threading.Lock()
        self._redis: bool | None = None

    def run(self, stop: threading.Event) -> None:
        """Rounds until ``stop``. Redis not answering is said once, in words, and only
        when it lasts: at start (``make run`` starts the app's Redis at the same time)
        for REDIS_START seconds, later for two rounds a second apart (not while the
        whole app stops)."""
        started, failures = time.monotonic(), 0
        while not stop.is_set():
            busy = 0
            try:
                busy = self.run_once()
                if self._redis is None:
                    log.info("ready: it sends the rooms' events to their webhook endpoints")
                elif self._redis is False:
                    log.info("the app's Redis answers again; the webhooks go on")
                self._redis, failures = True, 0
            except (redis.ConnectionError, redis.TimeoutError) as error:
                failures += 1
                waited = time.monotonic() - started
                lasting = waited > REDIS_START if self._redis is None else failures >= 2
                if lasting and self._redis is not False and not stop.is_set():
                    log.warning("the app's Redis does not answer (%s); webhooks wait", error)
                    self._redis = False
                stop.wait(1.0)
            except Exception:
                log.exception("webhook round failed")
            if not busy:
                self._wake.wait(self.poll)  # a try that ends wakes it early
                self._wake.clear()
        self.pool.shutdown(wait=True)

    def run_once(self) -> int:
        """One round: every room's new events queued, every endpoint's due deliveries
        handed to the senders. Returns how many things it did."""
        endpoints = self.webhooks.all()
        self._claiming = time.monotonic() - self._flagged > FLAG_EVERY
        if self._claiming:
            self.webhooks.flag_rooms()
            self._flagged = time.monotonic()
        done = self._record()
        for room in self._rooms(endpoints):
            done += self._events(room, endpoints)
        for endpoint in endpoints:
            if endpoint.enabled:
                done += self._send_due(endpoint)
        return done

    def _rooms(self, endpoints: list[Endpoint]) -> list[str]:
        """The rooms whose events some endpoint takes (or took: a stream left behind is
        read to its end while its room is still listened to)."""
        live = [e for e in endpoints if e.enabled]
        if any(e.rooms is None for e in live):
            return [text(r) for r in self.client.smembers(self.keys.rooms)]
        return sorted({room for e in live for room in e.rooms or ()})

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Until no delivery is being sent, every try recorded (tests)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                sent = sum(self._sending.values()) == sum(len(t) for t in self._tried.values())
            if sent:
                self._record()
                return
            time.sleep(0.01)

    # -- events into the outboxes --------------------------------------------

    def _events(self, room: str, endpoints: list[Endpoint]) -> int:
        stream = self.keys.room(room).events
        first = stream not in self._groups
        if first:
            if not self.client.exists(stream):
                return 0
            try:
                self.client.xgroup_create(stream, GROUP, id="0")
            except redis.ResponseError as error:
                if "BUSYGROUP" not in str(error):
                    raise
            self._groups.add(stream)
        try:
            messages = self._read(stream, first)
        except redis.ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            self._groups.discard(stream)  # the stream expired or went with its room
            return 0
        events = [self._event(room, i, texts(f)) for i, f in messages if f]
        for endpoint in endpoints:
            wanted = [e for e in events if endpoint.wants(room, e.type)]
            for at in range(0, len(wanted), FAN_OUT):
                self.webhooks.enqueue(endpoint.id, wanted[at : at + FAN_OUT])
        if messages:
            self.client.xack(stream, GROUP, *(stream_id for stream_id, _ in messages))
        return len(messages)

    def _read(self, stream: str, first: bool) -> list[tuple[str, dict[bytes, bytes]]]:
        """New events; the first time, and every FLAG_EVERY seconds, also another
        host's events it read and never queued (it died) and, the first time, this
        host's own (a restart), oldest first."""
        messages: list[tuple[str, dict[bytes, bytes]]] = []
        if first or self._claiming:
            idle = int(self.lease * 1000)
            _, taken, *_ = self.client.xautoclaim(
                stream, GROUP, self.worker, idle, "0-0", count=READ
            )
            messages.extend((text(i), f) for i, f in taken)
        for key in ("0", ">") if first else (">",):
            for _, batch in self.client.xreadgroup(GROUP, self.worker, {stream: key}, count=READ):
                messages.extend((text(i), f) for i, f in batch)
        return messages

    @staticmethod
    def _event(room: str, stream_id: str, fields: dict[str, str]) -> Event:
        kind, body, order = event_body(room, fields)
        at = float(fields.get("at") or 0)
        return Event(webhook_id(room, stream_id), kind, room, at, body, order)

    # -- sending ---------------------------------------------------------------

    def _send_due(self, endpoint: Endpoint) -> int:
        with self._lock:
            room = IN_FLIGHT - self._sending.get(endpoint.id, 0)
        if room <= 0:
            return 0
        due = self.webhooks.claim(endpoint.id, self.worker, self.lease, room)
        with self._lock:
            self._sending[endpoint.id] = self._sending.get(endpoint.id, 0) + len(due)
        for delivery in due:
            self.pool.submit(self._send, endpoint, delivery)
        return len(due)

    def _send(self, endpoint: Endpoint, delivery: Delivery) -> None:
        """One try, its outcome handed to the round (which records the round's tries of
        one endpoint in one script call)."""
        try:
            status, error = self.post(endpoint, delivery)
        except Exception as failure:  # a bug: recorded as a failed try, never lost
            log.exception("webhook %s to %s", delivery.id, endpoint.url)
            status, error = 0, type(failure).__name__
        with self._lock:
            self._tried.setdefault(endpoint.id, []).append(
                (endpoint, Try(delivery, status, error, self.clock()))
            )
        self._wake.set()

    def _record(self) -> int:
        """Records the tries that ended since the last round; how many."""
        with self._lock:
            tried, self._tried = self._tried, {}
        for endpoint_id, pairs in tried.items():
            try:  # Redis gone: raised, and the leases bring these tries back
                outcomes = self.webhooks.finish(endpoint_id, self.worker, [t for _, t in pairs])
            finally:
                with self._lock:
                    self._sending[endpoint_id] -= len(pairs)
            for (endpoint, t), outcome in zip(pairs, outcomes, strict=False):
                if outcome != "delivered":
                    log.info("webhook %s to %s: %s (%s)", t.delivery.id, endpoint.url, outcome,
                             t.error or t.status)  # fmt: skip
        return sum(len(pairs) for pairs in tried.values())

    def post(self, endpoint: Endpoint, delivery: Delivery) -> tuple[int, str]:
        """One try: the response's status and, unless a 2xx, what went wrong."""
        sent = headers(endpoint, delivery.id, delivery.body, time.time(), self.clock())
        try:
            response = self.http.request(
                "POST",
                endpoint.url,
                body=delivery.body.encode(),
                headers=sent,
                redirect=False,
                preload_content=False,
            )
            response.drain_conn()
            response.release_conn()
        except urllib3.exceptions.HTTPError as error:
            return 0, _failure(error)
        status = response.status
        return status, "" if 200 <= status < 300 else f"HTTP {status}"


def _failure(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    if isinstance(error, urllib3.exceptions.TimeoutError) or isinstance(
        reason, urllib3.exceptions.TimeoutError
    ):
        return f"no answer within {SEND_TIMEOUT:g} s"
    return str(reason or error)[:200] or type(error).__name__


def main() -> None:
    """``python -m webapp.workers.webhooks``: the app's settings, read and resolved as its
    workers do (the same Redis: it waits for the app's embedded one rather than start
    its own), its services built the same way."""
    from webapp.services import build

    logs.configure("webhooks")
    settings = config.settings()
    config.resolve(settings, start_redis=False)
    services = build(settings)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    worker = WebhookWorker(
        services.webhooks,
        services.clock,
        worker=os.environ.get("WEBAPP_WEBHOOK_WORKER", ""),
        lease=float(settings["WEBHOOK_LEASE_SECONDS"]),
        poll=float(settings["WEBHOOK_POLL_SECONDS"]),
    )
    worker.run(stop)


if __name__ == "__main__":
    main()
