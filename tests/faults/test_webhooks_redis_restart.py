"""Webhooks across a Redis restart (issue 31): events written before Redis stops (its
AOF fsynced), deliveries in flight while it is down, and the worker waiting it out:
once Redis is back every event reaches the receiver, none lost."""

from __future__ import annotations

import threading
import time

import redis
from faultkit import RedisServer
from receiver import Receiver

from webapp.domain.clock import Clock
from webapp.domain.rooms import WaitingRooms
from webapp.domain.webhooks import Webhooks
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts
from webapp.workers.webhooks import WebhookWorker


def test_every_event_arrives_across_a_redis_restart(redis_server: RedisServer) -> None:
    """Forty events, Redis stopped while the first are being sent and started again
    from its AOF: each of the forty webhook-ids is answered 2xx at least once."""
    client = redis.Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=1)
    keys = Keys("hooks")
    rooms = WaitingRooms(client, keys, Scripts(client))
    webhooks = Webhooks(client, keys, Scripts(client), Clock())
    receiver = Receiver()
    receiver.delay = 0.2
    webhooks.create(receiver.url)
    rooms.configure("r", {"capacity": 100})
    webhooks.flag_rooms()
    for i in range(20):
        rooms.join("r", identity=f"v{i}")
    worker = WebhookWorker(webhooks, Clock(), worker="w", lease=2.0, threads=4)
    stop = threading.Event()
    running = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    running.start()
    try:
        deadline = time.monotonic() + 10
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.02)
        with redis_server.down():
            time.sleep(2)
        deadline = time.monotonic() + 30
        while len({r.id for r in receiver.ok()}) < 40 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        running.join(timeout=15)
        receiver.stop()
        client.close()
    assert len({r.id for r in receiver.ok()}) == 40
