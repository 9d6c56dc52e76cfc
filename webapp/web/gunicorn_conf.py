"""gunicorn settings: ``gunicorn -c python:webapp.web.gunicorn_conf 'webapp:create_app()'``.

Without ``REDIS_URL`` the master starts one embedded redis-server before forking and
hands its URL to every worker; it stops it on exit.

Metrics: the master points ``PROMETHEUS_MULTIPROC_DIR`` at an empty directory before
forking, so the workers' request figures add up in one scrape (webapp/web/metrics.py).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import tempfile
import warnings
from pathlib import Path
from typing import Any

# Imported under other names: gunicorn takes this module's names as its settings
from webapp.config import settings as app_settings
from webapp.domain.connections import forget_process
from webapp.redis.connection import EmbeddedRedis, connect, redis_url
from webapp.redis.keys import Keys

# gevent, measured (bench/ws_sizing.py, docs/operations.md "Sizing"): every open room
# websocket holds its handler for as long as it is open. Under gthread that is one of
# `threads` per worker, and once sockets hold them all the waiting page's polls starve;
# under gevent it is a greenlet, so one worker per core holds `worker_connections`
# sockets and polls together. WEB_WORKER_CLASS=gthread still works (size WEB_THREADS
# above the sockets a worker may hold, plus room for polls).
worker_class = os.environ.get("WEB_WORKER_CLASS", "gevent")
workers = int(os.environ.get("WEB_CONCURRENCY", str(min(os.cpu_count() or 1, 4))))
worker_connections = int(os.environ.get("WEB_WORKER_CONNECTIONS", "1000"))  # gevent
threads = int(os.environ.get("WEB_THREADS", "64"))  # gthread only
timeout = 60
# Header sizes (docs/gate.md, "Header sizes"): the gate gets every cookie of the site it
# guards, and a busy shop's pass gunicorn's 8 KB per field (it answered 431). nginx's
# default, large_client_header_buffers 4 8k, takes 32 KB of headers in all, each field
# and the request line up to 8 KB; from an HTTP/2 browser each cookie is a field of its
# own, and nginx joins them into one Cookie line for the gate: up to those 32 KB.
limit_request_field_size = 32 * 1024
limit_request_line = 8190  # nginx's 8 KB request line; gunicorn's most
graceful_timeout = 10
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
# gunicorn 27's control socket has one default path per user: two apps (or a test run
# next to `make run`) would fight over it, and nothing here uses it.
control_socket_disable = True

_embedded: EmbeddedRedis | None = None
_metrics_dir: Path | None = None  # made by on_starting, removed on exit
METRICS_FILES = ("counter_*.db", "gauge_*.db", "histogram_*.db", "summary_*.db")


class QuietStop(logging.Filter):
    """A normal stop says one line ("Shutting down: Master"): the signal that asked for
    it and each worker's exit are gunicorn's routine, not news to whoever pressed Ctrl+C.
    Any other line, and every warning or error, still shows."""

    ROUTINE = re.compile(r"Handling signal: (int|term|quit)|Worker exiting \(pid")

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not self.ROUTINE.match(record.getMessage())


def on_starting(server: Any) -> None:
    global _embedded
    server.log.error_log.addFilter(QuietStop())  # the workers inherit it at their fork
    _share_metrics(server)
    settings = app_settings()  # as every worker and the mailer read them
    if settings["REDIS_URL"] or os.environ.get("REDIS_URL"):
        server.log.info("Redis: REDIS_URL from the environment")
        return
    _embedded = EmbeddedRedis(EmbeddedRedis.resolve(settings["DATA_DIR"]))
    os.environ["REDIS_URL"] = _embedded.start()
    server.log.info("Redis: embedded redis-server at %s", os.environ["REDIS_URL"])


def _share_metrics(server: Any) -> None:
    """prometheus_client's multiprocess mode: each worker writes its figures to files in
    PROMETHEUS_MULTIPROC_DIR, and a scrape adds them all up. Set here, before the fork,
    so every worker has it when it first imports prometheus_client (on loading the app;
    the client picks its value store then). The directory must start empty."""
    global _metrics_dir
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        Path(given).mkdir(parents=True, exist_ok=True)
        for pattern in METRICS_FILES:  # an earlier run's figures would count again
            for stale in Path(given).glob(pattern):
                stale.unlink()
        server.log.info("Metrics: the workers add up their figures in %s (as given)", given)
        return
    _metrics_dir = Path(tempfile.mkdtemp(prefix="wr-metrics-"))
    os.chown(_metrics_dir, server.cfg.uid, server.cfg.gid)  # workers may run as `user`
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(_metrics_dir)
    server.log.info("Metrics: the workers add up their figures in %s", _metrics_dir)


def child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess  # late: only after _share_metrics ran

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
    _forget_sockets(server, worker.pid)


def _forget_sockets(server: Any, pid: int) -> None:
    """A worker exited (a crash too): its visitors' sockets stop counting against their
    cap as soon as they reconnect (webapp.domain.connections), not after the TTL."""
    try:
        settings = app_settings()
        url = redis_url(settings["REDIS_URL"], settings["DATA_DIR"], start=False)
        client = connect(url)
        try:
            forget_process(client, Keys(settings["REDIS_PREFIX"]), f"{socket.gethostname()}:{pid}")
        finally:
            client.close()
    except Exception as error:  # Redis away: the sockets stop counting after the TTL
        server.log.warning("could not count out worker %s's sockets: %s", pid, error)


def post_fork(server: Any, worker: Any) -> None:
    # Out of the terminal's process group: Ctrl+C reaches the master alone, which stops
    # each worker once. A worker that also got the terminal's own SIGINT had its exit
    # interrupted by the master's signal, and printed that as a traceback.
    os.setpgrp()
    # The gevent worker patches the standard library after gunicorn has imported this
    # package (and with it redis, which imports ssl). gevent then names the modules it
    # could not patch: only redis.asyncio, which this app never uses. Silence just that.
    warnings.filterwarnings("ignore", message="Monkey-patching ssl after ssl")


def worker_exit(server: Any, worker: Any) -> None:
    """A worker stops (Ctrl+C, a restart): its background loops and its hub listener
    stop with it, quietly."""
    app = getattr(worker, "wsgi", None)
    services = getattr(app, "extensions", {}).get("services")
    if services is not None:
        services.stop()


def on_exit(server: Any) -> None:
    if _embedded is not None:
        _embedded.stop()
    if _metrics_dir is not None:
        shutil.rmtree(_metrics_dir, ignore_errors=True)
