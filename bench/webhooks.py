"""Webhook delivery time (issue 31): p50 and p99 from an event to its receiver's 2xx,
at 200 events a second.

Starts a private redis-server, a receiver on loopback (HTTP/1.1, kept-alive, answering
204 at once) and the webhook worker as production runs it (``python -m
webapp.workers.webhooks``, its default settings). A room with an endpoint taking all its
events is joined 100 times a second for ``--seconds`` (each join seats its visitor:
``visitor.joined`` and ``visitor.admitted``, 200 events a second), through the engine,
as the app's workers would. The receiver notes when each event arrives; the delay is
that time less the event's ``timestamp`` (the script's clock: Redis TIME, to the
millisecond). Also the worker's own histogram (``webhook_delivery_seconds``: event to
the recorded 2xx) and whether every event arrived.

Goal (docs/webhooks.md): p99 under one second at 200 events a second.

    .venv/bin/python bench/webhooks.py [--seconds 20] [--rate 200]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from servers import HOST, spawn, start_redis, stop, tree_cpu  # noqa: E402

from webapp.domain.clock import Clock  # noqa: E402
from webapp.domain.rooms import WaitingRooms  # noqa: E402
from webapp.domain.webhooks import Webhooks  # noqa: E402
from webapp.redis.keys import Keys  # noqa: E402
from webapp.redis.scripts import Scripts  # noqa: E402

PREFIX = "benchhooks"
GOAL_P99 = 1.0  # seconds


class Arrivals:
    def __init__(self) -> None:
        self.delays: dict[str, float] = {}  # webhook-id -> seconds from the event
        self.lock = threading.Lock()


def receiver(arrivals: Arrivals) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            now = time.time()
            at = datetime.fromisoformat(orjson.loads(body)["timestamp"]).timestamp()
            with arrivals.lock:
                arrivals.delays.setdefault(self.headers["webhook-id"], now - at)
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((HOST, 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=int, default=200, help="events a second")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wr-bench-")))
        port, redis_pid = start_redis(stack, workdir)
        url = f"redis://{HOST}:{port}/0"
        client = redis.Redis.from_url(url, decode_responses=True)
        keys, scripts = Keys(PREFIX), Scripts(client)
        rooms = WaitingRooms(client, keys, scripts)
        webhooks = Webhooks(client, keys, scripts, Clock())
        arrivals = Arrivals()
        server = receiver(arrivals)
        stack.callback(server.shutdown)
        webhooks.create(f"http://{HOST}:{server.server_address[1]}/hook")
        rooms.configure("bench", {"capacity": 1_000_000, "session_seconds": 86400})
        webhooks.flag_rooms()
        env = {**os.environ, "REDIS_URL": url, "WEBAPP_REDIS_PREFIX": PREFIX}
        worker = spawn([sys.executable, "-m", "webapp.workers.webhooks"], workdir / "w.log", env)
        stack.callback(stop, worker)
        joins = int(args.seconds * args.rate / 2)
        start = time.monotonic()
        for i in range(joins):
            due = start + i * 2 / args.rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            rooms.join("bench", identity=f"v{i}")
        sent = time.monotonic() - start
        deadline = time.monotonic() + 30
        while len(arrivals.delays) < 2 * joins and time.monotonic() < deadline:
            time.sleep(0.1)
        figures = webhooks.figures()
        cpu, redis_cpu = tree_cpu(worker.pid), tree_cpu(redis_pid)
        load = os.getloadavg()[0]
    delays = list(arrivals.delays.values())
    print(f"events: {2 * joins} in {sent:.1f} s ({2 * joins / sent:.0f}/s); arrived "
          f"{len(delays)}; lost {2 * joins - len(delays)}")  # fmt: skip
    if not delays:
        sys.exit(1)
    p50, p99 = percentile(delays, 0.50), percentile(delays, 0.99)
    mean = statistics.mean(delays)
    print(f"event to the receiver: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
          f"max {max(delays) * 1000:.0f} ms, mean {mean * 1000:.0f} ms")  # fmt: skip
    print(f"worker's histogram: {figures.delivered} delivered, mean "
          f"{figures.seconds / max(figures.delivered, 1) * 1000:.0f} ms to the recorded 2xx, "
          f"{figures.retry} retried, {figures.failed} failed")  # fmt: skip
    print(f"worker's CPU: {cpu:.1f} s, {cpu / (2 * joins) * 1000:.2f} ms an event (a core: "
          f"{2 * joins / max(cpu, 1e-9):.0f} events/s); Redis's CPU: {redis_cpu:.1f} s for "
          f"everything; load average {load:.1f} on {os.cpu_count()} cores")  # fmt: skip
    verdict = "pass" if p99 < GOAL_P99 and len(delays) == 2 * joins else "miss"
    print(f"goal: p99 under {GOAL_P99:g} s with nothing lost: {verdict}")


if __name__ == "__main__":
    main()
