"""Joins per address and per network (webapp/domain/join_limits.py, join_limits.lua, and
the same counting inside room_join.lua): each script against a plain-Python model, never
more than a limit's amount in any span of its window, Retry-After honest to the second,
a refused join counted nowhere (the engine's refusals too), and the keys of one join in
the room's hash slot (Redis Cluster)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from webapp.domain.join_limits import (
    BUCKETS,
    JoinLimits,
    Limit,
    Throttled,
    bucket_ms,
    network_of,
    retry_after,
)
from webapp.domain.refusals import RoomClosed
from webapp.domain.rooms import WaitingRooms
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

ADDRESSES = ["192.0.2.1", "192.0.2.2", "198.51.100.7", "2001:db8::1", "2001:db8::2"]


class Model:
    """The rule in plain Python: per (scope, who, window) the joins of each bucket; a
    join passes if, for every limit, the current bucket and the BUCKETS before it hold
    fewer than its amount."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int, int], int] = {}

    def buckets(self, limit: Limit, now_ms: int) -> list[int]:
        k = now_ms // bucket_ms(limit.window)
        return [self.counts.get((limit.scope, limit.who, limit.window, j), 0)
                for j in range(k - BUCKETS, k + 1)]  # fmt: skip

    def hit(self, limits: list[Limit], now_ms: int) -> str | None:
        for limit in limits:
            if sum(self.buckets(limit, now_ms)) + 1 > limit.amount:
                return limit.scope
        for limit in limits:
            key = (limit.scope, limit.who, limit.window, now_ms // bucket_ms(limit.window))
            self.counts[key] = self.counts.get(key, 0) + 1
        return None


def limits_of(address: str, per_address: int, per_network: int, window: int = 60) -> list[Limit]:
    return [Limit("join-address", address, per_address, window),
            Limit("join-network", network_of(address), per_network, window)]  # fmt: skip


@pytest.fixture
def joins(r: Any, keys: Keys) -> JoinLimits:
    return JoinLimits(r, keys, Scripts(r))


ROOM = "hall"


def outcome(
    joins: JoinLimits, limits: list[Limit], now: float, rooms: WaitingRooms | None = None
) -> str | None:
    """Which limit refuses a join now (None: it was counted): by join_limits.lua, or
    given ``rooms`` by the join itself (room_join.lua, a room with a seat for all)."""
    try:
        if rooms is None:
            joins.hit(ROOM, limits, now)
        else:
            rooms.join(ROOM, limits=joins.counting(ROOM, limits, now))
    except Throttled as refused:
        return refused.scope
    return None


@pytest.fixture(params=["join_limits.lua", "room_join.lua"])
def path(request: pytest.FixtureRequest, rooms: WaitingRooms) -> WaitingRooms | None:
    """Every counting case by both scripts that count."""
    return None if request.param == "join_limits.lua" else rooms


def open_hall(rooms: WaitingRooms | None) -> None:
    if rooms is not None:
        rooms.configure(ROOM, {"capacity": 1_000_000, "session_seconds": 86400})


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(ADDRESSES), st.integers(0, 40_000)), min_size=1, max_size=60
    ),
    per_address=st.integers(0, 6),
    per_network=st.integers(1, 9),
    window=st.sampled_from([7, 60]),  # 7 s: buckets of 1,167 ms, rounded up
)
def test_the_script_decides_as_the_model_and_no_window_holds_more(
    r: Any,
    keys: Keys,
    path: WaitingRooms | None,
    steps: list[tuple[str, int]],
    per_address: int,
    per_network: int,
    window: int,
) -> None:
    """The script's answers are the model's; and in the joins let in, no span of a
    window holds more than a limit's amount, whatever the timing."""
    r.flushall()
    open_hall(path)
    joins, model, now_ms = JoinLimits(r, keys, Scripts(r)), Model(), 1_000_000_000
    passed: list[tuple[int, str]] = []
    for address, gap in steps:
        now_ms += gap
        limits = limits_of(address, per_address, per_network, window)
        found = outcome(joins, limits, now_ms / 1000, path)
        assert found == model.hit(limits, now_ms), (address, now_ms)
        if found is None:
            passed.append((now_ms, address))
    for at, _ in passed:
        span = [(t, a) for t, a in passed if at <= t < at + window * 1000]
        for address in {a for _, a in span}:
            assert sum(1 for _, a in span if a == address) <= per_address
        for network in {network_of(a) for _, a in span}:
            assert sum(1 for _, a in span if network_of(a) == network) <= per_network


@settings(max_examples=300, deadline=None)
@given(
    amount=st.integers(0, 12),
    window=st.sampled_from([6, 7, 60, 3600]),
    counts=st.lists(st.integers(0, 5), min_size=BUCKETS + 1, max_size=BUCKETS + 1),
    share=st.floats(0, 0.999),
)
def test_retry_after_is_the_first_whole_second_a_join_passes(
    amount: int, window: int, counts: list[int], share: float
) -> None:
    """Refused now: after ``retry_after`` seconds (nobody else joining) a join passes,
    and one second earlier it would still have been refused (a limit of 0 refuses
    always: come back in a window and a bucket)."""
    size = bucket_ms(window)
    k = 1_000
    now_ms = k * size + int(share * size)
    model, limit = Model(), Limit("join-address", "192.0.2.1", amount, window)
    for j, n in enumerate(counts):
        model.counts[(limit.scope, limit.who, window, k - BUCKETS + j)] = n
    if sum(counts) + 1 <= amount:
        return  # not refused: nothing to wait for
    wait = retry_after(amount, counts, now_ms, size)
    if amount == 0:
        assert wait == -(-(BUCKETS + 1) * size // 1000)
        return
    assert wait >= 1 and sum(model.buckets(limit, now_ms + wait * 1000)) + 1 <= amount
    if wait > 1:
        assert sum(model.buckets(limit, now_ms + (wait - 1) * 1000)) + 1 > amount


def counters(r: Any) -> list[tuple[str, dict[str, str]]]:
    return sorted((k, r.hgetall(k)) for k in r.keys("*:joins:*"))


def test_a_refused_join_counts_nowhere(
    joins: JoinLimits, r: Any, path: WaitingRooms | None
) -> None:
    """The network refuses: the address's counter is not raised either."""
    open_hall(path)
    now = 1_000_000.0
    for i in range(3):
        outcome(joins, limits_of(f"203.0.113.{i}", 5, 3), now, path)
    before = counters(r)
    assert outcome(joins, limits_of("203.0.113.9", 5, 3), now, path) == "join-network"
    assert counters(r) == before


def test_a_join_the_engine_refuses_counts_nowhere(
    joins: JoinLimits, r: Any, rooms: WaitingRooms
) -> None:
    """The limits pass and the room is closed: the join's own call counts nothing."""
    rooms.configure(ROOM, {"capacity": 1, "status": "closed"})
    with pytest.raises(RoomClosed):
        rooms.join(ROOM, limits=joins.counting(ROOM, limits_of("192.0.2.1", 5, 5), 1e6))
    assert counters(r) == []


def test_a_rejoin_is_under_no_limit(joins: JoinLimits, r: Any, rooms: WaitingRooms) -> None:
    """A live identity joining again is a check-in: counted nowhere, never throttled."""
    open_hall(rooms)
    limits = limits_of("192.0.2.1", 1, 5)
    first = rooms.join(ROOM, identity="ada", limits=joins.counting(ROOM, limits, 1e6))
    again = rooms.join(ROOM, identity="ada", limits=joins.counting(ROOM, limits, 1e6))
    assert again.token == first.token
    assert [h for _, h in counters(r)] == [{str(int(1e9) // 10_000): "1"}] * 2


def test_a_throttled_join_says_when_to_come_back(joins: JoinLimits) -> None:
    now = 1_000_020.0  # 20 s into a minute
    limits = limits_of("192.0.2.1", 2, 100)
    assert [outcome(joins, limits, now) for _ in range(3)] == [None, None, "join-address"]
    with pytest.raises(Throttled) as refused:
        joins.hit(ROOM, limits, now)
    assert 60 <= refused.value.retry_after <= 70  # the 20 s bucket leaves after 60 to 70 s
    assert outcome(joins, limits, now + refused.value.retry_after - 1) == "join-address"
    assert outcome(joins, limits, now + refused.value.retry_after) is None


def test_keys_stay_small_and_expire(joins: JoinLimits, r: Any) -> None:
    """An address joining all day keeps at most BUCKETS + 1 buckets, and its key goes
    a window and a bucket after its last join."""
    for minute in range(30):
        outcome(joins, limits_of("192.0.2.1", 1000, 1000), 1_000_000.0 + minute * 7)
    for key in r.keys("*:joins:*"):
        assert r.hlen(key) <= BUCKETS + 1
        assert 60_000 < r.pttl(key) <= 70_000


def test_one_joins_keys_share_a_slot_on_a_cluster(db: Any) -> None:
    """An address's counters and its network's share the room's hash tag."""
    joins = JoinLimits(db, Keys("wrtest"), Scripts(db))
    for address in ("192.0.2.1", "2001:db8::5"):
        limits = [*limits_of(address, 2, 9), Limit("signup-address", address, 1, 3600)]
        assert [outcome(joins, limits, 1_000_000.0) for _ in range(2)] == [None, "signup-address"]


def test_networks_are_slash_24_and_slash_64() -> None:
    assert network_of("192.0.2.77") == "192.0.2.0/24"
    assert network_of("::ffff:192.0.2.77") == "192.0.2.0/24"
    assert network_of("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert network_of("unknown") == "unknown"


@given(st.ip_addresses())
def test_a_network_is_what_the_standard_library_says(ip: Any) -> None:
    """``network_of`` masks by hand (every join pays it): the same text as
    ``ipaddress.ip_network`` for any address, an IPv4 one written as IPv6 too."""
    import ipaddress

    mapped = ip.ipv4_mapped if ip.version == 6 else None
    plain = mapped or ip
    expected = str(
        ipaddress.ip_network(f"{plain}/{24 if plain.version == 4 else 64}", strict=False)
    )
    assert network_of(str(ip)) == expected
    assert network_of(ip.compressed) == network_of(ip.exploded) == expected
