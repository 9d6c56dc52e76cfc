"""A cap on one user's open websockets, counted across every worker and host.

Each server (one process, named by a server id) knows in memory how many sockets each
user has open on it, and copies that count into Redis with a deadline: per user a hash
server id -> count and a zset server id -> deadline (both ``{user:<id>}``). The scripts
(``webapp/lua/conn_*.lua``) count only servers whose deadline has not passed and drop
the others as they go, so no key scan is ever needed. ``heartbeat()`` renews this
server's deadline for every user it holds; call it every ttl/3 seconds or so. A server
that dies without cleaning up stops counting at most ``ttl_seconds`` after its last
heartbeat.

Use a fresh server id per process start (host, pid and a random part: ``host:pid:x``):
a restarted process under an old id would not know the counts its previous life left
behind.

A crashed worker (issue 25, hole 4): each server also keeps ``server_alive(host:pid)``
holding its id, renewed with its heartbeat; gunicorn's master deletes it when the worker
exits (``forget_process``). A refused socket looks at the servers that hold the user's
other sockets, and counts out at once those whose key is gone or names another server
(``conn_forget.lua``), then asks again: a visitor whose tabs were on a dead worker gets
them back as they reconnect, not after the TTL.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from redis.cluster import RedisCluster

from webapp.redis.keys import Keys
from webapp.redis.replies import text
from webapp.redis.scripts import Scripts

HEARTBEAT_BATCH = 500


class ConnectionLimits:
    """This server's share of every user's connection count. Thread-safe."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        scripts: Scripts,
        server_id: str,
        ttl_seconds: float = 30.0,
        max_per_user: int = 5,
    ) -> None:
        if not server_id or "{" in server_id or "}" in server_id:
            raise ValueError("server_id must be non-empty and have no braces")
        self.client = client
        self.keys = keys
        self.server_id = server_id
        self.ttl = float(ttl_seconds)
        self.max_per_user = max_per_user
        self.scripts = scripts
        self._cluster = isinstance(client, RedisCluster)
        # a Redis copy of a count must never be written out of order with another
        # copy of the same count: one lock serialises this server's writes
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._announced = False
        # the keys are only a memory bound: deadlines decide what counts
        self._key_ttl = math.ceil(self.ttl * 2) + 1

    def _user_keys(self, user: str) -> dict[str, str]:
        return {
            "counts": self.keys.user_connections(user),
            "deadlines": self.keys.user_connection_deadlines(user),
        }

    def acquire(self, user: str, now: float) -> bool:
        """One more socket for the user, unless they already have ``max_per_user`` open
        (on servers that are still alive)."""
        if self._acquire(user, now):
            return True
        return self._forget_dead(user, now) and self._acquire(user, now)

    def alive(self) -> None:
        """Says this server is alive (with every heartbeat)."""
        process = _process_of(self.server_id)
        if process:
            self.client.set(self.keys.server_alive(process), self.server_id, ex=self._key_ttl)

    def _forget_dead(self, user: str, now: float) -> bool:
        """Counts out the user's sockets on servers whose process is gone; True if any."""
        servers = [text(s) for s in self.client.hkeys(self.keys.user_connections(user))]
        dead = []
        for server in servers:
            process = _process_of(server)
            if server == self.server_id or not process:
                continue
            alive = self.client.get(self.keys.server_alive(process))
            if alive is None or text(alive) != server:
                dead.append(server)
        if dead:
            self.scripts["conn_forget"](keys=self._user_keys(user), args=dead)
        return bool(dead)

    def _acquire(self, user: str, now: float) -> bool:
        if not self._announced:  # before its first socket counts: never taken for dead
            self.alive()
            self._announced = True
        with self._lock:
            wanted = self._held.get(user, 0) + 1
            allowed, _total = self.scripts["conn_acquire"](
                keys=self._user_keys(user),
                args=[
                    self.server_id,
                    repr(now),
                    repr(now + self.ttl),
                    self.max_per_user,
                    wanted,
                    self._key_ttl,
                ],
            )
            if not int(allowed):
                return False
            self._held[user] = wanted
            return True

    def release(self, user: str, now: float) -> None:
        """One of the user's sockets on this server closed (no-op if none was held)."""
        with self._lock:
            held = self._held.get(user, 0)
            if held <= 0:
                return
            if held == 1:
                del self._held[user]
            else:
                self._held[user] = held - 1
            self._sync(self.client, user, held - 1, now)

    def heartbeat(self, now: float) -> int:
        """Renews this server's deadline for every user it holds; returns how many."""
        if self._announced:  # a server that never held a socket has nothing to vouch for
            self.alive()
        with self._lock:
            held = list(self._held.items())
            if self._cluster:  # redis-py refuses scripts in a cluster pipeline
                for user, count in held:
                    self._sync(self.client, user, count, now)
                return len(held)
            for start in range(0, len(held), HEARTBEAT_BATCH):
                pipe = self.client.pipeline(transaction=False)
                for user, count in held[start : start + HEARTBEAT_BATCH]:
                    self._sync(pipe, user, count, now)
                pipe.execute()
            return len(held)

    def open_count(self, user: str, now: float) -> int:
        """The user's open sockets on live servers (this one's from memory)."""
        with self._lock:
            return int(self._sync(self.client, user, self._held.get(user, 0), now))

    def held(self) -> dict[str, int]:
        """This server's open sockets per user."""
        with self._lock:
            return dict(self._held)

    def _sync(self, client: Any, user: str, count: int, now: float) -> Any:
        return self.scripts["conn_sync"](
            keys=self._user_keys(user),
            args=[self.server_id, repr(now), repr(now + self.ttl), count, self._key_ttl],
            client=client,
        )


def forget_process(client: Any, keys: Keys, process: str) -> None:
    """The worker running as ``process`` (``host:pid``) exited: its sockets stop counting
    as soon as their visitors reconnect (gunicorn's master calls this)."""
    client.delete(keys.server_alive(process))


def _process_of(server_id: str) -> str:
    """The ``host:pid`` of a server id ``host:pid:x``; '' for an id of another form
    (such a server is never taken for dead)."""
    return server_id.rsplit(":", 1)[0] if server_id.count(":") >= 2 else ""
