"""gunicorn settings: ``gunicorn -c python:webapp.gunicorn_conf 'webapp:create_app()'``.

Without ``REDIS_URL`` the master starts one embedded redis-server before forking and
hands its URL to every worker; it stops it on exit.
"""

from __future__ import annotations

import os
from typing import Any

from webapp.redis.connection import EmbeddedRedis

# Each open websocket holds one thread under gthread; see README "Sizing".
worker_class = os.environ.get("WEB_WORKER_CLASS", "gthread")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "32"))
timeout = 60
graceful_timeout = 10
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
# gunicorn 27's control socket has one default path per user: two apps (or a test run
# next to `make run`) would fight over it, and nothing here uses it.
control_socket_disable = True

_embedded: EmbeddedRedis | None = None


def on_starting(server: Any) -> None:
    global _embedded
    if os.environ.get("REDIS_URL"):
        server.log.info("Redis: REDIS_URL from the environment")
        return
    data_dir = os.environ.get("WEBAPP_DATA_DIR", "var")
    _embedded = EmbeddedRedis(EmbeddedRedis.resolve(data_dir))
    os.environ["REDIS_URL"] = _embedded.start()
    server.log.info("Redis: embedded redis-server at %s", os.environ["REDIS_URL"])


def on_exit(server: Any) -> None:
    if _embedded is not None:
        _embedded.stop()
