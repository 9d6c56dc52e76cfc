"""Joins per client address and per network (issue 25), all of one join's limits
checked and counted by one script call. No Flask.

A limit of ``amount`` per ``window`` seconds counts joins in ``BUCKETS`` buckets a window
(10 s for a minute's limit). A join passes while the buckets that overlap the last
``window`` seconds (the current one and the ``BUCKETS`` before it, the oldest counted
whole) hold fewer than ``amount``. So no span of ``window`` seconds ever holds more than
``amount`` joins (a moving window's promise; a sliding-window counter, which assumes the
previous window's joins were spread evenly, lets a client that times its joins take
more), while a key costs at most ``BUCKETS + 1`` hash fields, not one entry per join. A
join may be refused up to one bucket early: the price of that bound.

Every limit a join is under (its address, its network, a waitlist's sign-ups per
address) is checked and counted at once, with the join itself: the room's join script
(``room_join.lua``) takes the limits a ``Counting`` describes and refuses the join,
counting it nowhere, if one is reached; a join the engine refuses counts nowhere either,
as nothing is written until all passed. Where something must come between the count
and the join (a waitlist's sign-up, a room's puzzle: a throttled client solves nothing),
``join_limits.lua`` counts first and ``give_back`` undoes it. flask-limiter spent one
script call per limit and about three times a join's own CPU on its bookkeeping
(docs/performance.md); issue 25's own script was a second round trip per join. The
counters live under the room's hash tag (``Keys.join_limit``), so each room counts its
joins apart: the limits are against floods of one room (docs/operations.md).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any, NamedTuple

from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

BUCKETS = 6  # buckets a window: a minute's limit counts in 10 s buckets


class Limit(NamedTuple):
    """At most ``amount`` joins per ``window`` seconds of one ``who`` in ``scope``."""

    scope: str  # join-address | join-network | signup-address
    who: str  # the address or the network counted
    amount: int
    window: int  # seconds


class Throttled(Exception):
    """A join beyond a limit: which (``scope``) and in how many seconds one passes."""

    def __init__(self, scope: str, retry_after: int) -> None:
        super().__init__(f"{scope}: retry after {retry_after} s")
        self.scope = scope
        self.retry_after = retry_after


def ip_of(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``address`` names (an IPv4 one written as IPv6, ``::ffff:a.b.c.d``,
    as IPv4), or None if it names none (a unix socket's peer)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


IPV6_NETWORK = ((1 << 128) - 1) ^ ((1 << 64) - 1)  # the /64 of an IPv6 address


def network_of(address: str) -> str:
    """An address's network: its /24 (IPv4) or /64 (IPv6); the text itself if it is no
    address (a unix socket's peer)."""
    ip = ip_of(address)
    if ip is None:
        return address
    # what ip_network(strict=False) says, at a fraction of its cost (every join pays it)
    if ip.version == 4:
        a, b, c, _ = ip.packed
        return f"{a}.{b}.{c}.0/24"
    return f"{ipaddress.IPv6Address(int(ip) & IPV6_NETWORK)}/64"


def bucket_ms(window: int) -> int:
    """The length of one bucket of a limit of ``window`` seconds, in milliseconds
    (rounded up: ``BUCKETS`` of them cover the window)."""
    return max(-(-window * 1000 // BUCKETS), 1)


def retry_after(amount: int, buckets: Sequence[int], now_ms: int, size_ms: int) -> int:
    """Whole seconds (at least 1) until one more join passes a limit that refuses one
    now, if nobody else joins meanwhile: as each bucket leaves the window, its joins
    stop counting. ``buckets``: the counts, oldest first, the last the current one."""
    for gone in range(1, len(buckets) + 1):
        if sum(buckets[gone:]) + 1 <= amount:
            start = (now_ms // size_ms + gone) * size_ms  # when that many buckets left
            return max(1, -(-(start - now_ms) // 1000))
    return max(1, -(-(len(buckets) * size_ms) // 1000))  # a limit of 0: a window on


class Counted(NamedTuple):
    """Where one join was counted: each limit's key and the bucket it went in."""

    keys: tuple[str, ...]
    buckets: tuple[int, ...]


class Counting(NamedTuple):
    """One join's limits as a script takes them (``join_limits_lib.lua``): a key per
    limit, and the arguments: how many, the buckets a window, then per limit its amount,
    current bucket and bucket length in ms. ``read_limits`` there reads them."""

    limits: tuple[Limit, ...]
    keys: tuple[str, ...]
    args: tuple[int, ...]
    now_ms: int

    @property
    def counted(self) -> Counted:
        """Where the join is counted once it passed."""
        return Counted(self.keys, self.args[3::3])

    def refusal(self, reply: Sequence[Any]) -> Throttled:
        """The refusal a script's ``{n, c(k-b), ..., c(k)}`` means: the n-th limit (1-based)
        with its buckets' counts, oldest first."""
        refused, *buckets = (int(n) for n in reply)
        limit = self.limits[refused - 1]
        size = bucket_ms(limit.window)
        return Throttled(limit.scope, retry_after(limit.amount, buckets, self.now_ms, size))


NO_LIMITS = Counting((), (), (0,), 0)


class JoinLimits:
    def __init__(self, client: Any, keys: Keys, scripts: Scripts) -> None:
        self.client, self.keys = client, keys
        self._script = scripts["join_limits"]
        self._give_back = scripts["join_limits_give_back"]

    def counting(self, room: str, limits: Sequence[Limit], now: float) -> Counting:
        """``limits`` of a join of ``room`` now, as its script counts them."""
        if not limits:
            return NO_LIMITS
        now_ms = int(now * 1000)
        keys: list[str] = []
        args: list[int] = [len(limits), BUCKETS]
        for limit in limits:
            size = bucket_ms(limit.window)
            keys.append(self.keys.join_limit(room, limit.scope, limit.who, limit.window))
            args += [limit.amount, now_ms // size, size]
        return Counting(tuple(limits), tuple(keys), tuple(args), now_ms)

    def hit(self, room: str, limits: Sequence[Limit], now: float) -> Counted:
        """Counts one join of ``room`` under every limit, or none and raises Throttled
        (the first limit refused, in the order given). Returns where it was counted."""
        counting = self.counting(room, limits, now)
        if not counting.keys:
            return counting.counted
        reply = self._script(keys={"limits": counting.keys}, args=list(counting.args))
        if int(reply[0]):
            raise counting.refusal(reply)
        return counting.counted

    def give_back(self, counted: Counted) -> None:
        """A join counted by ``hit`` was refused after all: it counts nowhere."""
        if counted.keys:
            self._give_back(keys={"limits": counted.keys}, args=list(counted.buckets))
