"""Joins per client address and per network (issue 25), in sliding-window counters, all
of one join's limits checked and counted by one script call. No Flask.

A limit of ``amount`` per ``window`` seconds keeps two counters: this window's and the
previous one's. A join passes while ``previous * (1 - elapsed / window) + current`` stays
below ``amount`` (``refuses``) (the previous window's joins fade out as the current one fills: no
burst of twice the limit across a window's edge, as fixed windows allow), the same rule
as the ``limits`` library's sliding-window counter, which the admin throttles use
through flask-limiter. Here every limit a join is under (its address, its network, a
waitlist's sign-ups per address) is checked and counted in ``join_limits.lua`` at once:
flask-limiter spent one script call per limit and about three times a join's own CPU
on its bookkeeping (docs/performance.md). A refused join counts against nothing.

The counters of an address and of its network share one hash tag (the network's), so
the script runs on Redis Cluster.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any, NamedTuple

from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts


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


def network_of(address: str) -> str:
    """An address's network: its /24 (IPv4) or /64 (IPv6); the text itself if it is no
    address (a unix socket's peer)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    bits = 24 if ip.version == 4 else 64
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


def refuses(amount: int, previous: int, current: int, elapsed_ms: int, window_ms: int) -> bool:
    """Whether a limit refuses one more join ``elapsed_ms`` into its window. The product
    first, then one division: exact wherever the weighted count is a whole number, so a
    join at the edge passes or not as the arithmetic says (join_limits.lua is the same)."""
    return previous * (window_ms - elapsed_ms) / window_ms + current + 1 > amount


def retry_after(amount: int, window_ms: int, previous: int, current: int, elapsed_ms: int) -> int:
    """Whole seconds (at least 1) until one more join passes a limit that refuses one
    now, if nobody else joins meanwhile: the previous window's joins fade out; if this
    window's alone fill the limit, they must fade in the next window. In milliseconds,
    whole numbers throughout, as the script counts."""
    room = amount - 1  # the count a join may find and still pass
    if room < 0:  # a limit of 0: no join ever passes; ask again in a window
        wait_ms = window_ms
    elif current > room:  # into the next window, until current * (1 - t / W) <= room
        wait_ms = window_ms - elapsed_ms + -(-window_ms * (current - room) // current)
    elif previous > 0:  # until previous * (W - elapsed - t) / W + current <= room
        wait_ms = window_ms - elapsed_ms - window_ms * (room - current) // previous
    else:  # not refused
        wait_ms = 0
    return max(1, -(-wait_ms // 1000))


class JoinLimits:
    def __init__(self, client: Any, keys: Keys, scripts: Scripts) -> None:
        self.client, self.keys = client, keys
        self._script = scripts["join_limits"]

    def hit(self, limits: Sequence[Limit], network: str, now: float) -> None:
        """Counts one join under every limit, or none and raises Throttled (the first
        limit refused, in the order given)."""
        if not limits:
            return
        keys: list[str] = []
        args: list[int] = []
        now_ms = int(now * 1000)
        for limit in limits:
            index, elapsed_ms = divmod(now_ms, limit.window * 1000)
            for number in (index - 1, index):
                keys.append(self.keys.join_limit(network, limit.scope, limit.who, limit.window,
                                                 number))  # fmt: skip
            args += [limit.amount, elapsed_ms, limit.window * 1000]
        refused, previous, current = (int(n) for n in self._script(keys=keys, args=args))
        if refused:
            limit = limits[refused - 1]
            window_ms = limit.window * 1000
            wait = retry_after(limit.amount, window_ms, previous, current, now_ms % window_ms)
            raise Throttled(limit.scope, wait)
