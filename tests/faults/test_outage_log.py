"""What the operator reads in the app's log through a Redis outage (issue 35): each
background loop (the workers' periodic loops, the hub listener, the mailer) says once
that it cannot reach Redis and once that it works again, not a traceback every
interval."""

from __future__ import annotations

import logging
import re
import threading
import time

import building
import pytest
import redis
from faultkit import PREFIX, SWEEP, RedisServer
from gunicorn_app import Server
from recording import smtp_server

from webapp.live.realtime import Hub
from webapp.redis.keys import Keys

pytestmark = [pytest.mark.faults, pytest.mark.slow]

WORKERS = 2  # the app fixture's
OUTAGE = 10.0  # seconds: 20 sweeps
OTHER_LOOPS = ("chat-relay", "conn-heartbeat")  # they touch Redis only while sockets are open


def test_an_outage_is_one_line_per_worker_each_way(redis_server: RedisServer, app: Server) -> None:
    """Redis stopped for 10 s and started again: no traceback in gunicorn's log, and each
    worker's sweeper says once that it cannot reach Redis and once that it works again
    (and after how long); no other background loop says more."""
    time.sleep(4 * SWEEP)  # every worker has swept with Redis up
    before = len(app.log.read_text())
    with redis_server.down():
        time.sleep(OUTAGE)
    time.sleep(4 * SWEEP)  # every worker has swept again
    said = app.log.read_text()[before:]

    assert "Traceback" not in said, said
    sweeper = [line for line in said.splitlines() if "room-sweeper" in line]
    down = [line for line in sweeper if "cannot reach Redis" in line]
    up = [line for line in sweeper if re.search(r"works again after \d+ s", line)]
    assert (len(down), len(up), len(sweeper)) == (WORKERS, WORKERS, 2 * WORKERS), said
    for loop in OTHER_LOOPS:
        assert len([line for line in said.splitlines() if loop in line]) <= 2 * WORKERS, said


def test_the_hub_listener_says_an_outage_once_each_way(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The websockets' pub/sub listener, its Redis stopped for 5 s (5 retries): one
    warning when it loses Redis, one line when it listens again, and it hears again."""
    client = redis.Redis.from_url(redis_server.url, socket_timeout=1, socket_connect_timeout=1)
    hub = Hub(client, Keys(PREFIX), retry=1.0)
    heard: list[dict[str, object]] = []
    hub.subscribe("t", heard.append)
    try:
        assert hub.wait_ready()
        with caplog.at_level(logging.INFO, logger="webapp.live.realtime"):
            with redis_server.down():
                time.sleep(5)
            assert hub.wait_ready(10)
            time.sleep(0.5)
        hub.publish("t", {"n": 1})
        deadline = time.monotonic() + 5
        while not heard and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        hub.close()
        client.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "webapp.live.realtime"]
    assert len(lines) == 2, lines
    assert "hub listener cannot reach Redis" in lines[0]
    assert re.search(r"hub listener works again after \d+ s", lines[1]), lines
    assert heard == [{"n": 1}]


def test_the_mailer_says_a_stopped_or_frozen_redis_once_each_way(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The mailer on a Redis that is stopped for 3 s, then frozen for 3 s (its calls time
    out): ready once, then one warning and one line back for each outage, no traceback."""
    client = redis.Redis.from_url(
        redis_server.url, decode_responses=True, socket_timeout=0.5, socket_connect_timeout=0.5
    )
    stop = threading.Event()
    logs = caplog.at_level(logging.INFO, logger="webapp.workers.mailer")
    with smtp_server() as (_, smtp_port), logs:
        mailer = building.mailer_of(building.engine(client, Keys(PREFIX)), smtp_port)
        mailer.settings = mailer.settings.changed(poll=0.2)
        running = threading.Thread(target=mailer.run, args=(stop,), daemon=True)
        running.start()
        try:
            time.sleep(1)
            with redis_server.down():
                time.sleep(3)
            time.sleep(1)
            with redis_server.frozen_while():
                time.sleep(3)
            time.sleep(1.5)
        finally:
            stop.set()
            running.join(10)
            client.close()
    said = [r.getMessage() for r in caplog.records if r.name == "webapp.workers.mailer"]
    assert not [r for r in caplog.records if r.exc_info], said
    assert len([line for line in said if line.startswith("ready:")]) == 1, said
    assert len([line for line in said if line.startswith("lost the app's Redis")]) == 2, said
    assert len([line for line in said if "Redis answers again" in line]) == 2, said
