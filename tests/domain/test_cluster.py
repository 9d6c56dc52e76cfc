"""Everything besides the room engine (tested case by case in test_rooms.py) also runs on
Redis Cluster: chat, connection limits, the hub's pub/sub and the sweep."""

from __future__ import annotations

import time

import pytest

from webapp.domain.chat import Chats, room_chat_id
from webapp.domain.connections import ConnectionLimits
from webapp.domain.rooms import public_id
from webapp.domain.sweeper import Sweeper
from webapp.live.chat_relay import ChatRelay
from webapp.live.realtime import Hub
from webapp.redis.connection import connect
from webapp.redis.scripts import Scripts

pytestmark = pytest.mark.cluster


@pytest.fixture
def client(cluster_url):
    """The domain's services (tests/domain/conftest.py) on the cluster."""
    cluster = connect(cluster_url)
    cluster.flushall()
    yield cluster
    cluster.close()


def test_chat_on_cluster(chats):
    """Join, send, read, acknowledge, fetch and leave work with keys spread over nodes."""
    for member in ("ann", "bo"):
        chats.join("room:hall", member, 1.0)
    for i in range(3):
        chats.send("room:hall", "ann", "Ann", f"m{i}", 2.0 + i)
    assert [m.text for m in chats.read("room:hall", 0)] == ["m0", "m1", "m2"]
    assert chats.ack("room:hall", "bo", 2) == 2
    assert [m.id for m in chats.fetch("room:hall", "bo")] == [3]
    assert chats.chats_of("bo") == {"room:hall": 3}
    chats.leave("room:hall", "ann")
    assert chats.leave("room:hall", "bo") == 0


def test_connection_limits_on_cluster(client, keys):
    """The per-visitor cap counts across servers on a cluster too."""
    scripts = Scripts(client)
    one = ConnectionLimits(client, keys, scripts, "one", ttl_seconds=30, max_per_user=2)
    two = ConnectionLimits(client, keys, scripts, "two", ttl_seconds=30, max_per_user=2)
    assert one.acquire("ann", 100.0)
    assert two.acquire("ann", 100.0)
    assert not two.acquire("ann", 100.0)
    one.release("ann", 101.0)
    assert two.acquire("ann", 101.0)
    assert two.heartbeat(102.0) == 1


def test_hub_and_chat_relay_on_cluster(client, keys, chats):
    """Pub/sub wake-ups cross the cluster: a socket gets a message sent elsewhere."""
    hub = Hub(client, keys)
    relay = ChatRelay(chats, hub, time.time)
    got: list[dict] = []

    class Tab:
        def send(self, frame: dict) -> bool:
            got.append(frame)
            return True

    relay.attach(Tab(), "room:hall", "ann", chats.join("room:hall", "ann", time.time()))
    assert hub.wait_ready()
    sender = Chats(client, keys, Scripts(client))
    sender.join("room:hall", "bo", time.time())
    sender.send("room:hall", "bo", "Bo", "over the cluster", time.time())
    deadline = time.monotonic() + 5
    while not any(f["type"] == "message" for f in got):
        assert time.monotonic() < deadline, got
        time.sleep(0.02)
    assert [f["text"] for f in got if f["type"] == "message"] == ["over the cluster"]
    hub.close()


def test_sweep_on_cluster(rooms, chats, visits, clock, reports):
    """The sweep's lock, its room upkeep and its chat tidying run on a cluster."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 10})
    seated = rooms.join("hall")
    chats.join(room_chat_id("hall"), public_id(seated.token), clock.now)
    for _ in range(3):
        rooms.join("hall")
    rooms.leave("hall", seated.token)
    clock.advance(11)
    assert Sweeper(visits, interval=5).sweep_once() > 0
    assert reports.summary("hall").waiting == 0
    assert chats.members(room_chat_id("hall")) == {}
