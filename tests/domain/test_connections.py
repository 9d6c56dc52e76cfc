"""Per-user connection limits across servers, including servers that die."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from webapp.domain.connections import ConnectionLimits, forget_process
from webapp.redis.scripts import Scripts

TTL = 30.0


@pytest.fixture
def server(r, keys):
    """A factory of servers sharing one Redis: server("a") is process a's limits."""

    def make(server_id: str, ttl: float = TTL, most: int = 3) -> ConnectionLimits:
        return ConnectionLimits(r, keys, Scripts(r), server_id, ttl_seconds=ttl, max_per_user=most)

    return make


def test_acquire_up_to_the_cap_then_refuse(server, clock):
    """A user gets max_per_user sockets; the next one is refused."""
    a = server("a")
    assert [a.acquire("ann", clock.now) for _ in range(4)] == [True, True, True, False]
    assert a.held() == {"ann": 3}
    assert a.acquire("bob", clock.now)


def test_release_frees_a_slot(server, clock):
    """Closing a socket lets the user open another; releasing nothing is harmless."""
    a = server("a")
    for _ in range(3):
        a.acquire("ann", clock.now)
    a.release("ann", clock.now)
    a.release("bob", clock.now)
    assert a.acquire("ann", clock.now)
    assert not a.acquire("ann", clock.now)


def test_cap_counts_across_servers(server, clock):
    """Sockets on every server count against the one cap."""
    a, b = server("a"), server("b")
    assert a.acquire("ann", clock.now)
    assert a.acquire("ann", clock.now)
    assert b.acquire("ann", clock.now)
    assert not b.acquire("ann", clock.now)
    assert not a.acquire("ann", clock.now)
    assert b.open_count("ann", clock.now) == 3
    a.release("ann", clock.now)
    assert b.acquire("ann", clock.now)


def test_dead_server_stops_counting_after_ttl(server, clock, r, keys):
    """A server that stops its heartbeat no longer counts once its deadline passed."""
    a, b = server("a"), server("b")
    for _ in range(3):
        a.acquire("ann", clock.now)
    clock.advance(TTL - 1)
    assert not b.acquire("ann", clock.now)
    clock.advance(2)  # a has died without a word
    assert b.acquire("ann", clock.now)
    assert r.hgetall(keys.user_connections("ann")) == {"b": "1"}
    assert r.zrange(keys.user_connection_deadlines("ann"), 0, -1) == ["b"]


def test_heartbeat_keeps_a_live_server_counted(server, clock):
    """A server that keeps beating keeps its users' sockets counted, however long."""
    a, b = server("a"), server("b")
    for _ in range(3):
        a.acquire("ann", clock.now)
    for _ in range(10):
        clock.advance(TTL / 3)
        assert a.heartbeat(clock.now) == 1
    assert not b.acquire("ann", clock.now)


def test_heartbeat_restores_an_entry_dropped_during_a_stall(server, clock, r, keys):
    """A server that stalled past its deadline puts its counts back on its next beat."""
    a, b = server("a"), server("b")
    for _ in range(2):
        a.acquire("ann", clock.now)
    clock.advance(TTL + 1)
    assert b.acquire("ann", clock.now)  # a looked dead: its entry is dropped
    assert r.hget(keys.user_connections("ann"), "a") is None
    a.heartbeat(clock.now)
    assert r.hget(keys.user_connections("ann"), "a") == "2"
    assert not b.acquire("ann", clock.now)


def test_stalled_server_still_counts_its_own_sockets(server, clock):
    """A server's own memory is the truth for its sockets, even after its entry lapsed."""
    a, b = server("a"), server("b")
    b.acquire("ann", clock.now)
    for _ in range(2):
        a.acquire("ann", clock.now)
    clock.advance(TTL + 1)
    b.heartbeat(clock.now)
    assert not a.acquire("ann", clock.now)  # 2 of its own + 1 on b


def test_release_to_zero_removes_the_entries(server, clock, r, keys):
    """When a user's last socket closes the user's keys are gone."""
    a = server("a")
    a.acquire("ann", clock.now)
    a.release("ann", clock.now)
    assert a.held() == {}
    assert r.exists(keys.user_connections("ann"), keys.user_connection_deadlines("ann")) == 0
    assert a.heartbeat(clock.now) == 0


def test_keys_expire_when_nobody_renews_them(server, clock, r, keys):
    """Both per-user keys carry a TTL (a memory bound; deadlines decide what counts)."""
    server("a").acquire("ann", clock.now)
    for key in (keys.user_connections("ann"), keys.user_connection_deadlines("ann")):
        assert 0 < r.ttl(key) <= 2 * TTL + 1


def test_threads_of_two_servers_never_exceed_the_cap(server):
    """Many threads on two servers acquiring at once: never more than the cap."""
    a, b = server("a", most=5), server("b", most=5)
    results: list[bool] = []
    lock = threading.Lock()

    def grab(limits: ConnectionLimits) -> None:
        for _ in range(5):
            ok = limits.acquire("ann", time.time())
            with lock:
                results.append(ok)

    threads = [threading.Thread(target=grab, args=(s,)) for s in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 5
    assert sum(a.held().values()) + sum(b.held().values()) == 5
    assert a.open_count("ann", time.time()) == 5


# -- the seed's version --------------------------------------------------------


class NaiveLimits:
    """The seed's design: a counter per user and server, summed through KEYS."""

    def __init__(self, conn, server_id, most):
        self.conn, self.server_id, self.most = conn, server_id, most

    def acquire(self, user):
        counts = self.conn.mget(self.conn.keys(f"customer-limit-{user}:*") or ["-"])
        total = sum(int(c) for c in counts if c)
        yield  # another server may run here
        if total >= self.most:
            return False
        key = f"customer-limit-{user}:{self.server_id}"
        self.conn.incr(key)
        self.conn.expire(key, 600)
        return True


def run(steps):
    try:
        while True:
            next(steps)
    except StopIteration as done:
        return done.value


def test_race_check_then_increment_goes_over_the_cap_only_in_the_naive_version(server, clock, r):
    """Naive: two servers both read 2 of 3 and both admit. Ours admits one."""
    one, two = NaiveLimits(r, "a", 3), NaiveLimits(r, "b", 3)
    run(one.acquire("ann"))
    run(one.acquire("ann"))
    first, second = one.acquire("ann"), two.acquire("ann")
    next(first)
    next(second)
    assert run(first) and run(second)
    assert sum(int(v) for v in r.mget(r.keys("customer-limit-ann:*"))) == 4

    a, b = server("a"), server("b")
    a.acquire("ann", clock.now)
    a.acquire("ann", clock.now)
    assert [a.acquire("ann", clock.now), b.acquire("ann", clock.now)] == [True, False]


def test_naive_version_scans_keys_ours_does_not(server, clock, r):
    """The seed's design runs KEYS on every connection; ours never runs KEYS or SCAN."""

    def scans() -> int:
        stats = r.info("commandstats")
        return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("keys", "scan"))

    r.config_resetstat()
    run(NaiveLimits(r, "a", 3).acquire("ann"))
    assert scans() == 1
    r.config_resetstat()
    a, b = server("a"), server("b")
    a.acquire("ann", clock.now)
    b.acquire("ann", clock.now)
    a.heartbeat(clock.now + 10)
    b.release("ann", clock.now + 50)
    assert scans() == 0


def test_naive_version_counts_a_dead_server_for_ten_minutes(r, server, clock):
    """Naive: a dead server's count lives as long as its key's 10-minute TTL; ours TTL."""
    run(NaiveLimits(r, "dead", 1).acquire("ann"))
    assert r.ttl("customer-limit-ann:dead") > 590
    assert not run(NaiveLimits(r, "b", 1).acquire("ann"))

    server("dead", most=1).acquire("ann", clock.now)
    clock.advance(TTL + 0.01)
    assert server("b", most=1).acquire("ann", clock.now)


# -- a real server process killed without cleanup --------------------------------

HOLDER_SCRIPT = """
import sys, time, redis
from webapp.domain.connections import ConnectionLimits, forget_process
from webapp.redis.scripts import Scripts
from webapp.redis.keys import Keys
ttl = float(sys.argv[3])
client = redis.Redis.from_url(sys.argv[1])
limits = ConnectionLimits(client, Keys(sys.argv[2]), Scripts(client), "doomed",
                          ttl_seconds=ttl, max_per_user=3)
for _ in range(3):
    assert limits.acquire("ann", time.time())
print("ready", flush=True)
while True:
    time.sleep(ttl / 4)
    limits.heartbeat(time.time())
"""


@pytest.mark.slow
def test_killed_server_gives_the_slots_back_within_the_ttl(server, keys, redis_url):
    """A server process killed with SIGKILL stops counting within ttl_seconds."""
    ttl = 1.0
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER_SCRIPT, redis_url, keys.prefix, str(ttl)],
        stdout=subprocess.PIPE,
        text=True,
    )
    survivor = server("survivor", ttl=ttl)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(ttl * 1.5)  # longer than the ttl: the heartbeat keeps it counted
        assert not survivor.acquire("ann", time.time())
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed_at = time.time()
        while not survivor.acquire("ann", time.time()):
            assert time.time() - killed_at < ttl + 0.5, "slots did not come back in time"
            time.sleep(0.02)
        back_after = time.time() - killed_at
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert back_after <= ttl + 0.25
    assert survivor.acquire("ann", time.time()) and survivor.acquire("ann", time.time())


def test_a_crashed_workers_sockets_stop_counting_when_the_visitor_reconnects(
    server, clock, r, keys
):
    """Issue 25, hole 4: a visitor at the cap whose tabs were on a worker that died gets
    them back on another worker at once (gunicorn's master forgets the dead process),
    not after the connection TTL; a live worker's sockets still count."""
    dead = server("host:101:aa", most=5)
    live = server("host:102:bb", most=5)
    other = server("host:103:cc", most=5)
    assert all(dead.acquire("ann", clock.now) for _ in range(4))
    assert live.acquire("ann", clock.now)
    assert not other.acquire("ann", clock.now)  # at the cap, everyone alive
    forget_process(r, keys, "host:101")  # what the master does at the worker's exit
    assert [other.acquire("ann", clock.now) for _ in range(5)] == [True] * 4 + [False]
    assert other.open_count("ann", clock.now) == 5


def test_a_restarted_pid_does_not_vouch_for_the_dead_server(server, clock, r, keys):
    """A new worker under a reused pid names itself: the old server id is counted out."""
    old = server("host:7:old", most=2)
    assert old.acquire("bob", clock.now) and old.acquire("bob", clock.now)
    new = server("host:7:new", most=2)
    new.alive()
    assert new.acquire("bob", clock.now)
