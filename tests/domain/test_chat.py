"""The chat: rules, the races of the book's version, and several real processes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Generator
from typing import Any

import pytest
import redis

from webapp.domain.chat import (
    MAX_TEXT,
    ChatExists,
    Chats,
    InvalidChat,
    InvalidMessage,
    Message,
    NotMember,
    RateLimited,
    room_chat_id,
)
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

CHAT = room_chat_id("lobby")


@pytest.fixture
def lobby(chats, clock):
    """A room chat with ann and bob in it."""
    chats.join(CHAT, "ann", clock.now)
    chats.join(CHAT, "bob", clock.now)
    return chats


def send(chats, who, text, now, chat=CHAT):
    return chats.send(chat, who, who.title(), text, now)


def ids(messages):
    return [m.id for m in messages]


# -- the rules ----------------------------------------------------------------


def test_send_then_fetch_in_id_order(lobby, clock):
    """Every member fetches every message once, in id order."""
    for i in range(5):
        send(lobby, "ann" if i % 2 else "bob", f"m{i}", clock.now + i)
    assert ids(lobby.fetch(CHAT, "ann")) == [1, 2, 3, 4, 5]
    assert ids(lobby.fetch(CHAT, "bob")) == [1, 2, 3, 4, 5]
    assert lobby.fetch(CHAT, "ann") == []


def test_message_is_a_typed_value_with_server_time(lobby, clock):
    """A message carries id, sender id and name, text and the server's time."""
    sent = lobby.send(CHAT, "ann", "Ann <b>", '  hi "you" <script> é\n', clock.now)
    assert sent == Message(1, "ann", "Ann <b>", 'hi "you" <script> é', clock.now)
    assert lobby.fetch(CHAT, "bob") == [sent]


def test_fetch_moves_seen_forward(lobby, clock):
    """After a fetch the member's seen id is the latest id, in the chat and the index."""
    send(lobby, "ann", "one", clock.now)
    send(lobby, "ann", "two", clock.now)
    lobby.fetch(CHAT, "bob")
    assert lobby.members(CHAT)["bob"] == 2 == lobby.latest_id(CHAT)
    assert lobby.chats_of("bob") == {CHAT: 2}


@pytest.mark.parametrize("text", ["", "   ", "\n\t \r\n"])
def test_empty_message_refused(lobby, clock, text):
    """An empty (or all-blank) message is refused with a reason and stores nothing."""
    with pytest.raises(InvalidMessage, match="empty"):
        send(lobby, "ann", text, clock.now)
    assert lobby.latest_id(CHAT) == 0


def test_over_long_message_refused(lobby, clock):
    """2,000 characters are fine; 2,001 are refused with a reason."""
    assert len(send(lobby, "ann", "x" * MAX_TEXT, clock.now).text) == MAX_TEXT
    with pytest.raises(InvalidMessage, match="at most 2,000 characters"):
        send(lobby, "ann", "x" * (MAX_TEXT + 1), clock.now)
    assert lobby.latest_id(CHAT) == 1


def test_rate_limit_slows_a_fast_sender_only(lobby, clock):
    """The 21st message in 10 seconds is refused with a reason; others and later are fine."""
    for i in range(20):
        send(lobby, "ann", f"m{i}", clock.now + i * 0.1)
    with pytest.raises(RateLimited, match="too fast") as refused:
        send(lobby, "ann", "one too many", clock.now + 2)
    assert 0 < refused.value.retry_after <= 10
    assert send(lobby, "bob", "still fine", clock.now + 2).id == 21
    assert ids(lobby.fetch(CHAT, "bob")) == list(range(1, 22))
    assert send(lobby, "ann", "later", clock.now + 10.05).id == 22


def test_refused_send_does_not_use_up_the_rate(chats, clock):
    """A send refused for not being a member does not count against the sender's rate."""
    chats.join(CHAT, "ann", clock.now)
    for _ in range(25):
        with pytest.raises(NotMember):
            send(chats, "eve", "hello", clock.now)
    chats.join(CHAT, "eve", clock.now)
    assert send(chats, "eve", "hello", clock.now).id == 1


def test_send_publishes_a_wake_up(lobby, clock, r):
    """A send publishes the new id on the chat's signal channel."""
    pubsub = r.pubsub()
    pubsub.subscribe(lobby.signal_channel(CHAT))
    assert pubsub.get_message(timeout=1)["type"] == "subscribe"
    send(lobby, "ann", "hi", clock.now)
    wake = pubsub.get_message(timeout=1)
    pubsub.close()
    assert wake["data"] == "1"


def test_non_member_can_neither_send_nor_fetch(lobby, clock):
    """Only members send and fetch."""
    with pytest.raises(NotMember):
        send(lobby, "eve", "hi", clock.now)
    with pytest.raises(NotMember):
        lobby.fetch(CHAT, "eve")
    assert "eve" not in lobby.members(CHAT)


def test_braces_in_ids_refused(chats, clock):
    """A chat or member id with braces (which would break the hash tag) is refused."""
    with pytest.raises(InvalidChat):
        chats.join("room:{x}", "ann", clock.now)
    with pytest.raises(InvalidChat):
        chats.join(CHAT, "a}b", clock.now)


def test_create_group_chat(chats, clock):
    """A group chat starts with its members at id 0; the same id cannot be created twice."""
    chats.create("g1", ["ann", "bob", "cy"], clock.now)
    assert chats.members("g1") == {"ann": 0, "bob": 0, "cy": 0}
    assert chats.chats_of("cy") == {"g1": 0}
    send(chats, "ann", "hello all", clock.now, chat="g1")
    assert ids(chats.fetch("g1", "cy")) == [1]
    with pytest.raises(ChatExists):
        chats.create("g1", ["eve"], clock.now)


def test_join_starts_at_latest_with_recent_history(lobby, clock):
    """A newcomer gets the last few messages as history and fetches only newer ones."""
    for i in range(5):
        send(lobby, "ann", f"m{i}", clock.now)
    joined = lobby.join(CHAT, "cy", clock.now, history=3)
    assert ids(joined.history) == [3, 4, 5]
    assert (joined.seen_id, joined.latest_id, joined.rejoined) == (5, 5, False)
    assert lobby.fetch(CHAT, "cy") == []
    send(lobby, "ann", "new", clock.now)
    assert ids(lobby.fetch(CHAT, "cy")) == [6]


def test_rejoin_keeps_seen_so_a_reconnect_catches_up(lobby, clock):
    """Joining again (a reconnect) keeps the seen id: the next fetch brings what was missed."""
    send(lobby, "ann", "before", clock.now)
    lobby.fetch(CHAT, "bob")
    send(lobby, "ann", "while away 1", clock.now)
    send(lobby, "ann", "while away 2", clock.now)
    again = lobby.join(CHAT, "bob", clock.now, history=5)
    assert again.rejoined
    assert ids(again.history) == [1]
    assert ids(lobby.fetch(CHAT, "bob")) == [2, 3]


def test_cleanup_removes_what_everyone_has_seen(r, keys, clock):
    """Messages every member has seen go, except the newest keep_recent."""
    chats = Chats(r, keys, Scripts(r), keep_recent=2)
    chats.create("g", ["ann", "bob"], clock.now)
    for i in range(6):
        send(chats, "ann", f"m{i}", clock.now, chat="g")
    chats.fetch("g", "ann")
    assert r.zcard(keys.chat("g").messages) == 6  # bob has seen nothing yet
    chats.fetch("g", "bob")
    assert r.zrange(keys.chat("g").messages, 0, -1, withscores=True)[0][1] == 5
    assert r.zcard(keys.chat("g").messages) == 2


def test_leaver_no_longer_holds_cleanup_back(r, keys, clock):
    """When the member who read least leaves, what the others have seen is cleaned up."""
    chats = Chats(r, keys, Scripts(r), keep_recent=0)
    chats.create("g", ["ann", "bob", "cy"], clock.now)
    for i in range(4):
        send(chats, "ann", f"m{i}", clock.now, chat="g")
    chats.fetch("g", "ann")
    chats.fetch("g", "bob")
    assert r.zcard(keys.chat("g").messages) == 4
    assert chats.leave("g", "cy") == 2
    assert r.zcard(keys.chat("g").messages) == 0
    assert chats.chats_of("cy") == {}


def test_history_cap_bounds_a_member_who_never_reads(r, keys, clock):
    """Past the cap the oldest go; the slow reader gets the newest and a count of the gap."""
    chats = Chats(r, keys, Scripts(r), history_cap=10, keep_recent=3, rate_limit=1000)
    chats.create("g", ["ann", "sleepy"], clock.now)
    for i in range(25):
        send(chats, "ann", f"m{i}", clock.now, chat="g")
        chats.fetch("g", "ann")
        assert r.zcard(keys.chat("g").messages) <= 10
    late = chats.fetch("g", "sleepy")
    assert ids(late) == list(range(16, 26))
    assert late.missed == 15


def test_last_leave_deletes_the_chat_and_its_counter(lobby, clock, r, keys):
    """The last member out deletes every key of the chat, counter included."""
    send(lobby, "ann", "hi", clock.now)
    assert lobby.leave(CHAT, "ann") == 1
    assert lobby.leave(CHAT, "bob") == 0
    assert r.exists(*keys.chat(CHAT).all()) == 0
    assert lobby.chats_of("ann") == lobby.chats_of("bob") == {}


def test_every_key_has_a_bound(lobby, clock, r, keys):
    """Chat keys, the seen index and the send log all carry a TTL."""
    send(lobby, "ann", "hi", clock.now)
    lobby.fetch(CHAT, "bob")
    for key in [*keys.chat(CHAT).all(), keys.user_seen("bob"), keys.send_rate("ann")]:
        assert r.ttl(key) > 0, key


def test_leave_of_a_non_member_changes_nothing(lobby):
    """Leaving a chat one is not in is harmless."""
    assert lobby.leave(CHAT, "eve") == 2
    assert set(lobby.members(CHAT)) == {"ann", "bob"}


# -- the book's version, for the race tests -------------------------------------
# Each operation is a generator: every ``yield`` is a point where another client's
# commands can run. Driving them step by step gives a deterministic interleaving.


def run(steps: Generator[None, None, Any]) -> Any:
    """Drives a naive operation to its end and returns its result."""
    try:
        while True:
            next(steps)
    except StopIteration as done:
        return done.value


class NaiveChat:
    """Redis in Action 6.5.2: several commands per operation, a lock with no expiry."""

    def __init__(self, conn: redis.Redis) -> None:
        self.conn = conn

    def create(self, chat_id, members):
        self.conn.zadd(f"chat:{chat_id}", dict.fromkeys(members, 0))
        for m in members:
            self.conn.zadd(f"seen:{m}", {chat_id: 0})

    def acquire_lock(self, name, acquire_timeout=0.05):
        identifier = str(uuid.uuid4())
        end = time.time() + acquire_timeout
        while time.time() < end:
            if self.conn.setnx(f"lock:{name}", identifier):
                return identifier
            time.sleep(0.001)
        return False

    def send_locked(self, chat_id, sender, message):
        identifier = self.acquire_lock(f"chat:{chat_id}")
        if not identifier:
            raise Exception("Couldn't get the lock")
        yield from self.send_unlocked(chat_id, sender, message)
        self.conn.delete(f"lock:chat:{chat_id}")

    def send_unlocked(self, chat_id, sender, message):
        mid = self.conn.incr(f"ids:{chat_id}")
        yield
        self.conn.zadd(f"msgs:{chat_id}", {f"{mid}:{sender}:{message}": mid})
        return mid

    def fetch(self, recipient):
        seen = self.conn.zrange(f"seen:{recipient}", 0, -1, withscores=True)
        found = [
            (chat_id, self.conn.zrangebyscore(f"msgs:{chat_id}", seen_id + 1, "inf"))
            for chat_id, seen_id in seen
        ]
        yield
        out = []
        for chat_id, messages in found:
            if not messages:
                continue
            seen_id = int(messages[-1].split(":")[0])
            self.conn.zadd(f"chat:{chat_id}", {recipient: seen_id})
            self.conn.zadd(f"seen:{recipient}", {chat_id: seen_id})
            out += [int(m.split(":")[0]) for m in messages]
        return out

    def join(self, chat_id, user):
        message_id = int(self.conn.get(f"ids:{chat_id}") or 0)
        yield
        self.conn.zadd(f"chat:{chat_id}", {user: message_id})
        self.conn.zadd(f"seen:{user}", {chat_id: message_id})

    def leave(self, chat_id, user):
        self.conn.zrem(f"chat:{chat_id}", user)
        self.conn.zrem(f"seen:{user}", chat_id)
        if not self.conn.zcard(f"chat:{chat_id}"):
            self.conn.delete(f"msgs:{chat_id}", f"ids:{chat_id}")
        yield


def test_race_overlapping_fetches_deliver_duplicates_only_in_the_naive_version(lobby, clock, r):
    """Two overlapping fetches of one member: naive delivers twice, ours once."""
    naive = NaiveChat(r)
    naive.create("c", ["ann"])
    for i in range(3):
        run(naive.send_unlocked("c", "bob", f"m{i}"))
    first, second = naive.fetch("ann"), naive.fetch("ann")
    next(first)
    next(second)
    assert run(first) == run(second) == [1, 2, 3]  # the same messages, twice

    for i in range(3):
        send(lobby, "bob", f"m{i}", clock.now)
    first_script = lobby._fetch_script(CHAT, "ann")
    second_script = lobby._fetch_script(CHAT, "ann")
    assert len(first_script[4:]) == 3
    assert second_script[4:] == []


def test_race_seen_moves_backward_only_in_the_naive_version(lobby, clock, r):
    """A slow fetch finishing last moves naive's seen id back; ours never goes back."""
    naive = NaiveChat(r)
    naive.create("c", ["ann"])
    run(naive.send_unlocked("c", "bob", "m1"))
    slow = naive.fetch("ann")
    next(slow)  # read message 1
    run(naive.send_unlocked("c", "bob", "m2"))
    assert run(naive.fetch("ann")) == [1, 2]
    assert run(slow) == [1]  # writes seen = 1 after seen = 2
    assert r.zscore("chat:c", "ann") == 1
    assert run(naive.fetch("ann")) == [2]  # delivered again

    send(lobby, "bob", "m1", clock.now)
    slow_reply = lobby._fetch_script(CHAT, "ann")
    send(lobby, "bob", "m2", clock.now)
    assert ids(lobby.fetch(CHAT, "ann")) == [2]
    lobby._record_seen("ann", CHAT, int(slow_reply[2]))  # the slow one's index update lands last
    assert lobby.members(CHAT)["ann"] == 2
    assert lobby.chats_of("ann") == {CHAT: 2}
    assert lobby.fetch(CHAT, "ann") == []


def test_race_leave_during_fetch_brings_the_leaver_back_only_in_the_naive_version(lobby, clock, r):
    """Naive: a fetch finishing after a leave puts the leaver back. Ours does not."""
    naive = NaiveChat(r)
    naive.create("c", ["ann", "bob"])
    run(naive.send_unlocked("c", "bob", "m1"))
    fetching = naive.fetch("ann")
    next(fetching)
    run(naive.leave("c", "ann"))
    run(fetching)
    assert r.zscore("chat:c", "ann") == 1  # back in the chat, holding cleanup back
    assert r.zscore("seen:ann", "c") == 1

    send(lobby, "bob", "m1", clock.now)
    reply = lobby._fetch_script(CHAT, "ann")
    lobby.leave(CHAT, "ann")
    lobby._record_seen("ann", CHAT, int(reply[2]))  # the fetch's index update lands late
    assert "ann" not in lobby.members(CHAT)
    assert lobby.chats_of("ann") == {}
    with pytest.raises(NotMember):
        lobby.fetch(CHAT, "ann")
    assert "ann" not in lobby.members(CHAT)


def test_race_join_during_last_leave_loses_messages_only_in_the_naive_version(chats, clock, r):
    """Naive: a join racing the last leave restarts ids under the joiner. Ours does not."""
    naive = NaiveChat(r)
    naive.create("c", ["ann"])
    for i in range(3):
        run(naive.send_unlocked("c", "ann", f"m{i}"))
    joining = naive.join("c", "bob")
    next(joining)  # read the latest id: 3
    run(naive.leave("c", "ann"))  # the last member out deletes the counter
    run(joining)
    assert run(naive.send_unlocked("c", "cy", "hello bob")) == 1  # ids restarted under bob
    assert run(naive.fetch("bob")) == []  # and bob never gets it

    chats.join(CHAT, "ann", clock.now)
    for i in range(3):
        send(chats, "ann", f"m{i}", clock.now)
    chats.leave(CHAT, "ann")  # our join runs either wholly before or wholly after this
    joined = chats.join(CHAT, "bob", clock.now)
    assert (joined.seen_id, joined.latest_id) == (0, 0)
    chats.join(CHAT, "cy", clock.now)
    send(chats, "cy", "hello bob", clock.now)
    assert ids(chats.fetch(CHAT, "bob")) == [1]


def test_race_join_just_before_last_leave_keeps_ids(chats, clock):
    """A join that wins the race keeps the chat alive: ids go on, nothing is lost."""
    chats.join(CHAT, "ann", clock.now)
    for i in range(3):
        send(chats, "ann", f"m{i}", clock.now)
    chats.join(CHAT, "bob", clock.now)
    assert chats.leave(CHAT, "ann") == 1
    send(chats, "bob", "still here", clock.now)
    assert chats.latest_id(CHAT) == 4
    assert ids(chats.fetch(CHAT, "bob")) == [4]


def test_race_unlocked_send_loses_a_message_only_in_the_naive_version(lobby, clock, r):
    """Naive without its lock: id 2 stored before id 1 makes a reader skip 1. Ours can't."""
    naive = NaiveChat(r)
    naive.create("c", ["ann"])
    slow, fast = naive.send_unlocked("c", "bob", "a"), naive.send_unlocked("c", "cy", "b")
    next(slow)  # got id 1, not stored yet
    run(fast)  # id 2 stored
    assert run(naive.fetch("ann")) == [2]
    run(slow)
    assert run(naive.fetch("ann")) == []  # message 1 is never delivered

    send(lobby, "bob", "a", clock.now)
    send(lobby, "ann", "b", clock.now)
    assert ids(lobby.fetch(CHAT, "bob")) == [1, 2]


def test_race_lock_without_expiry_blocks_every_sender_only_in_the_naive_version(
    lobby, clock, r, keys
):
    """A sender dying while holding the naive lock stops all sends; ours has no lock."""
    naive = NaiveChat(r)
    naive.create("c", ["ann"])
    sending = naive.send_locked("c", "bob", "about to crash")
    next(sending)  # holds the lock; the process dies here and never releases it
    with pytest.raises(Exception, match="Couldn't get the lock"):
        run(naive.send_locked("c", "cy", "hello"))
    assert r.ttl("lock:chat:c") == -1  # and it never expires

    send(lobby, "ann", "hello", clock.now)
    assert not [k for k in r.keys("wrtest:*") if "lock" in k]


# -- several real processes -----------------------------------------------------


def _socket_worker(url, prefix, member, to_send, total, go, out):
    """One websocket's loop in its own process: send its share, fetch until all seen."""
    client = redis.Redis.from_url(url, decode_responses=True)
    chats = Chats(client, Keys(prefix), Scripts(client), rate_limit=10_000)
    go.wait(30)
    got, sent = [], []
    deadline = time.time() + 20
    while time.time() < deadline:
        if len(sent) < to_send:
            sent.append(chats.send(CHAT, member, member, f"{member} #{len(sent)}", time.time()).id)
        fetched = ids(chats.fetch(CHAT, member))
        got += fetched
        if not fetched:
            if chats.members(CHAT)[member] >= total:
                break
            time.sleep(0.002)  # a real socket would wait for the wake-up here
    out.put((member, os.getpid(), got, sent))
    client.close()


class _Results(list):
    put = list.append


@pytest.mark.slow
def test_processes_send_concurrently_and_everyone_gets_all_in_order(r, keys, redis_url):
    """Three processes send at once: each socket gets ids in order, each member all, once."""
    chats = Chats(r, keys, Scripts(r))
    plan = [("s1", 30), ("ann", 30), ("ann", 0)]  # child processes; this one is s0
    total = 30 + sum(n for _m, n in plan)
    for member in ["s0", "s1", "ann"]:
        chats.join(CHAT, member, time.time())
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Barrier(len(plan) + 1), ctx.Queue()  # all start sending together
    procs = [
        ctx.Process(target=_socket_worker, args=(redis_url, keys.prefix, m, n, total, go, out))
        for m, n in plan
    ]
    for p in procs:
        p.start()
    mine = _Results()
    _socket_worker(redis_url, keys.prefix, "s0", 30, total, go, mine)
    results = [*mine, *(out.get(timeout=30) for _ in procs)]
    for p in procs:
        p.join(10)
    assert chats.latest_id(CHAT) == total
    by_member: dict[str, list[int]] = {}
    for member, _pid, got, sent in results:
        assert got == sorted(got)  # each socket receives in id order
        assert sent == sorted(sent)  # and a sender's own messages keep their order
        by_member.setdefault(member, []).extend(got)
    assert sorted(by_member) == ["ann", "s0", "s1"]
    for member, got in by_member.items():
        assert sorted(got) == list(range(1, total + 1)), member  # no gaps, no duplicates
    assert len({pid for _m, pid, got, sent in results if sent}) == 3


SENDER_SCRIPT = """
import sys, time, redis
from webapp.domain.chat import Chats
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts
client = redis.Redis.from_url(sys.argv[1])
chats = Chats(client, Keys(sys.argv[2]), Scripts(client), rate_limit=10**9, history_cap=10**6)
print("ready", flush=True)
while True:
    chats.send("room:lobby", "doomed", "Doomed", "spam", time.time())
"""


@pytest.mark.slow
def test_sender_killed_mid_send_leaves_nothing_behind(chats, r, keys, redis_url):
    """A sender killed with SIGKILL leaves no lock and no hole: ids stay consecutive."""
    chats.join(CHAT, "doomed", time.time())
    chats.join(CHAT, "ann", time.time())
    proc = subprocess.Popen(
        [sys.executable, "-c", SENDER_SCRIPT, redis_url, keys.prefix],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        while chats.latest_id(CHAT) < 200:
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    nxt = send(chats, "ann", "after the crash", time.time())
    got = ids(chats.fetch(CHAT, "ann"))
    assert got == list(range(1, nxt.id + 1))
