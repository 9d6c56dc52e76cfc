"""The hub: messages published in one process reach subscribers in every process."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from webapp.live.realtime import Hub, RoomRelay
from webapp.redis.keys import Keys


@pytest.fixture
def hubs(redis_url: str, r: redis.Redis) -> Iterator[tuple[Hub, Hub]]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    first, second = Hub(client, Keys("wrtest")), Hub(client, Keys("wrtest"))
    yield first, second
    first.close()
    second.close()
    client.close()


def test_publish_reaches_subscribers_of_other_hubs(hubs: tuple[Hub, Hub]) -> None:
    """Two hubs stand for two workers: each subscriber of the topic gets the message."""
    first, second = hubs
    got: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
    first.subscribe("room:a", lambda m: got.put(("first", m)))
    second.subscribe("room:a", lambda m: got.put(("second", m)))
    second.subscribe("room:b", lambda m: got.put(("wrong topic", m)))
    assert first.wait_ready() and second.wait_ready()
    first.publish("room:a", {"type": "room.changed"})
    received = [got.get(timeout=5), got.get(timeout=5)]
    assert sorted(who for who, _ in received) == ["first", "second"]
    assert all(message == {"type": "room.changed"} for _, message in received)
    with pytest.raises(queue.Empty):
        got.get(timeout=0.2)


def test_cancel_stops_delivery_and_a_failing_callback_harms_no_one(
    hubs: tuple[Hub, Hub],
) -> None:
    """A cancelled subscriber hears nothing more; one that raises does not stop others."""
    hub, _ = hubs
    got: queue.Queue[dict[str, Any]] = queue.Queue()

    def broken(message: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    hub.subscribe("t", broken)
    cancel = hub.subscribe("t", got.put)
    assert hub.wait_ready()
    hub.publish("t", {"n": 1})
    assert got.get(timeout=5) == {"n": 1}
    cancel()
    assert hub.subscribers("t") == 1
    hub.publish("t", {"n": 2})
    with pytest.raises(queue.Empty):
        got.get(timeout=0.3)


class FakeSocket:
    def __init__(self, room: str) -> None:
        self.room = room
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()

    def send(self, frame: dict[str, Any]) -> bool:
        self.frames.put(frame)
        return True


def test_relay_forwards_frames_and_coalesces_changes(hubs: tuple[Hub, Hub]) -> None:
    """Frames reach each local socket of the room; a burst of changes sends few states."""
    first, second = hubs
    reads: list[str] = []

    def state(room: str) -> dict[str, Any]:
        reads.append(room)
        return {"type": "room.state", "room": room}

    relay = RoomRelay(first, state, min_gap=0.3)
    here, there, elsewhere = FakeSocket("a"), FakeSocket("a"), FakeSocket("b")
    for sock in (here, there, elsewhere):
        relay.attach(sock)
    assert first.wait_ready()
    RoomRelay(second, state).publish("a", {"type": "chat.message", "text": "hi"})
    assert here.frames.get(timeout=5) == {"type": "chat.message", "text": "hi"}
    assert there.frames.get(timeout=5)["text"] == "hi"
    for _ in range(20):
        relay.changed("a")
    assert here.frames.get(timeout=5) == {"type": "room.state", "room": "a"}
    assert here.frames.get(timeout=5) == {"type": "room.state", "room": "a"}  # the trailing one
    states = 2
    while True:  # a slow machine may spread the burst over more than one gap
        try:
            here.frames.get(timeout=0.6)
        except queue.Empty:
            break
        states += 1
    assert states == len(reads) <= 4 and set(reads) == {"a"} and elsewhere.frames.empty()
    relay.detach(here)
    relay.detach(there)
    assert first.subscribers("room:a") == 0 and first.subscribers("room:b") == 1


def test_a_rush_of_changes_sends_one_signal_now_and_one_at_the_end_of_the_gap(
    hubs: tuple[Hub, Hub],
) -> None:
    """The first change is signalled before changed() returns; the rest of the burst
    shares one trailing signal, sent after the gap (so it follows every change made)."""
    first, second = hubs
    signals: queue.Queue[float] = queue.Queue()
    second.subscribe("room:a", lambda m: signals.put(time.monotonic()))
    assert second.wait_ready()
    relay = RoomRelay(first, lambda room: {}, signal_gap=1.0)
    began = time.monotonic()
    for _ in range(50):
        relay.changed("a")
    burst = time.monotonic() - began
    assert signals.get(timeout=5) - began < 1.0  # the first, at once
    assert signals.get(timeout=5) - began >= 1.0  # the trailing one, after the gap
    with pytest.raises(queue.Empty):
        signals.get(timeout=1.5)
    assert burst < 1.0  # (all fifty fell in one gap, as the counts assume)
    relay.changed("a")  # a quiet room again: signalled at once
    assert signals.get(timeout=5) - began >= 2.0
