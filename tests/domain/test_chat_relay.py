"""Live chat delivery through the per-process relay: order, no gaps, no repeats."""

from __future__ import annotations

import threading
import time

import pytest

from webapp.domain.chat import Chats
from webapp.live.chat_relay import ChatRelay, Subscription
from webapp.live.realtime import Hub
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

CHAT = "room:lobby"


class Tab:
    """A socket that records the frames it is sent."""

    def __init__(self) -> None:
        self.frames: list[dict] = []
        self.lock = threading.Lock()

    def send(self, frame: dict) -> bool:
        with self.lock:
            self.frames.append(frame)
        return True

    def ids(self) -> list[int]:
        with self.lock:
            return [f["id"] for f in self.frames if f["type"] == "message"]

    def history(self) -> list[int]:
        return [m["id"] for f in self.frames if f["type"] == "chat.history" for m in f["messages"]]


@pytest.fixture
def make_relay(redis_url, keys, clock):
    import redis

    made = []

    def make(hub_prefix=None, **chat_options):
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        hub = Hub(client, Keys(hub_prefix) if hub_prefix else keys)
        relay = ChatRelay(Chats(client, keys, Scripts(client), **chat_options), hub, clock)
        made.append((hub, client))
        return relay

    yield make
    for hub, client in made:
        hub.close()
        client.close()


def enter(relay: ChatRelay, tab: Tab, member: str, after: int | None = None) -> Subscription:
    """The member joins the chat (as ``Visits.open`` does) and the tab's socket starts."""
    joined = relay.chats.join(CHAT, member, relay.clock())
    return relay.attach(tab, CHAT, member, joined, after)


def wait_for(check, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_every_tab_of_a_member_gets_every_message(r, make_relay):
    """Two tabs of one member, in two processes, both get all messages in order."""
    one, two = make_relay(), make_relay()
    a, b, c = Tab(), Tab(), Tab()
    sub_a = enter(one, a, "ann")
    enter(two, b, "ann")
    sub_c = enter(two, c, "cy")
    one.hub.wait_ready()
    two.hub.wait_ready()
    for i in range(10):
        (one.send(sub_a, "Ann", f"a{i}") if i % 2 else two.send(sub_c, "Cy", f"c{i}"))
    for tab in (a, b, c):
        wait_for(lambda tab=tab: len(tab.ids()) == 10)
        assert tab.ids() == list(range(1, 11))


def test_new_page_gets_history_then_what_came_since(r, make_relay):
    """A reloaded page gets history up to the seen id, then the rest, each once."""
    relay = make_relay()
    first = Tab()
    sub = enter(relay, first, "ann")
    other = enter(relay, Tab(), "bo")
    for i in range(3):
        relay.send(sub, "Ann", f"m{i}")
    relay.wake(CHAT)
    relay.detach(sub)  # the page closes: what it was shown is acknowledged
    for i in range(2):
        relay.send(other, "Bo", f"n{i}")
    reloaded = Tab()
    enter(relay, reloaded, "ann")
    assert reloaded.history() == [1, 2, 3]
    assert reloaded.ids() == [4, 5]


def test_socket_reconnect_gets_only_what_it_lacks(r, make_relay):
    """A socket that comes back with its last id gets exactly the messages after it."""
    relay = make_relay()
    sender = enter(relay, Tab(), "bo")
    for i in range(4):
        relay.send(sender, "Bo", f"m{i}")
    again = Tab()
    enter(relay, again, "ann", after=2)
    assert again.history() == []
    assert again.ids() == [3, 4]


def test_lost_wakeup_is_caught_up(r, make_relay):
    """A message whose wake-up never arrived is delivered by the periodic catch-up."""
    deaf = make_relay(hub_prefix="elsewhere")  # hears no wake-ups of this chat
    tab = Tab()
    enter(deaf, tab, "ann")
    sender = make_relay()
    sender.send(enter(sender, Tab(), "bo"), "Bo", "hello")
    time.sleep(0.2)
    assert tab.ids() == []
    deaf.wake_all()
    assert tab.ids() == [1]


def test_trimmed_messages_are_announced(r, make_relay):
    """A socket far behind is told how many messages the history cap dropped."""
    relay = make_relay(history_cap=5, keep_recent=2, rate_limit=1000)
    sender = enter(relay, Tab(), "bo")
    for i in range(8):
        relay.send(sender, "Bo", f"m{i}")
    late = Tab()
    enter(relay, late, "ann", after=0)
    assert {"type": "chat.missed", "count": 3} in late.frames
    assert late.ids() == [4, 5, 6, 7, 8]


def test_acks_move_seen_ids_and_clean_up(r, make_relay, keys):
    """Acknowledged messages that all members have seen are cleaned up."""
    relay = make_relay(keep_recent=0)
    ann = enter(relay, Tab(), "ann")
    bo = enter(relay, Tab(), "bo")
    for i in range(3):
        relay.send(ann, "Ann", f"m{i}")
    relay.wake(CHAT)
    relay.ack_all()
    assert relay.chats.members(CHAT) == {"ann": 3, "bo": 3}
    assert r.zcard(keys.chat(CHAT).messages) == 0
    assert bo.cursor == 3
