"""Fault fixtures: a redis-server of the test's own that it stops, starts again from its
AOF, freezes and thaws, and the app under gunicorn (2 gevent workers) on top of it.

Never the session's Redis: these tests take theirs down. The app runs with short
settings (grace 5 s, dropout 10 s, a beat a second, a sweep every half second) so an
outage of 20 s is long against every bound the room keeps.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faultkit import BEAT, CAPACITY, DROPOUT, GRACE, PREFIX, SECRET_KEY, SWEEP, RedisServer
from gunicorn_app import ARTIFACTS, Server, run_gunicorn
from visitors import OpenPage, Prober, RoomWatch

from webapp.redis.keys import Keys


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test's own; always thawed and stopped afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="wr-faults-redis-"))
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        if (directory / "redis.log").exists():
            ARTIFACTS.mkdir(exist_ok=True)
            shutil.copyfile(directory / "redis.log", ARTIFACTS / "faults-redis.log")
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def app(redis_server: RedisServer) -> Iterator[Server]:
    """The app under gunicorn, 2 gevent workers, on this test's Redis."""
    env = {
        "REDIS_URL": redis_server.url,
        "WEBAPP_REDIS_PREFIX": PREFIX,
        "WEBAPP_SECRET_KEY": SECRET_KEY,
        "WEBAPP_SWEEP_INTERVAL": str(SWEEP),
        "WEBAPP_WS_BEAT_SECONDS": str(BEAT),
        "WEBAPP_WS_REFRESH_SECONDS": "2",
        "WEB_CONCURRENCY": "2",
        "WEB_WORKER_CLASS": "gevent",
    }
    with run_gunicorn(env, log_name="faults-gunicorn.log") as server:
        yield server


@pytest.fixture
def room(app: Server) -> str:
    """A room of CAPACITY seats with short grace and dropout."""
    name = f"faults-{secrets.token_hex(3)}"
    app.admin(name, capacity=CAPACITY, grace_seconds=GRACE, dropout_seconds=DROPOUT)
    return name


@pytest.fixture
def people(app: Server, room: str) -> Iterator[Callable[[str], OpenPage]]:
    """Opens a person's page at the room's gate; every page is closed afterwards."""
    opened: list[OpenPage] = []

    def open_page(name: str) -> OpenPage:
        page = OpenPage(app, room, name, SECRET_KEY)
        opened.append(page)
        return page

    yield open_page
    for page in opened:
        page.stop()  # all at once, then wait for each
    for page in opened:
        page.close()


@pytest.fixture
def watch(redis_server: RedisServer, room: str) -> Iterator[RoomWatch]:
    """The room's seats and line, sampled from Redis five times a second."""
    watcher = RoomWatch(redis_server.port, Keys(PREFIX).room(room))
    yield watcher
    watcher.stop()


@pytest.fixture
def probe(app: Server) -> Iterator[Callable[[list[str]], Prober]]:
    """Starts timing GETs of some paths twice a second; stopped afterwards."""
    started: list[Prober] = []

    def start(paths: list[str]) -> Prober:
        started.append(Prober(app, paths))
        return started[-1]

    yield start
    for prober in started:
        prober.stop()
