"""Joins per address and per network in sliding-window counters (webapp/domain/
join_limits.py, join_limits.lua): the script against a plain-Python model, Retry-After
honest to the second, a refused join counted nowhere, and the keys of one join in one
hash slot (Redis Cluster)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from webapp.domain.join_limits import (
    JoinLimits,
    Limit,
    Throttled,
    network_of,
    refuses,
    retry_after,
)
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

ADDRESSES = ["192.0.2.1", "192.0.2.2", "198.51.100.7", "2001:db8::1", "2001:db8::2"]


class Model:
    """Sliding-window counters in plain Python: per (scope, who, window) the joins of
    each numbered window; a join passes if every limit's weighted count has room."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int, int], int] = {}

    def hit(self, limits: list[Limit], now: float) -> str | None:
        now_ms = int(now * 1000)
        for limit in limits:
            index, into = divmod(now_ms, limit.window * 1000)
            previous = self.counts.get((limit.scope, limit.who, limit.window, index - 1), 0)
            current = self.counts.get((limit.scope, limit.who, limit.window, index), 0)
            if refuses(limit.amount, previous, current, into, limit.window * 1000):
                return limit.scope
        for limit in limits:
            index = now_ms // (limit.window * 1000)
            key = (limit.scope, limit.who, limit.window, index)
            self.counts[key] = self.counts.get(key, 0) + 1
        return None


def limits_of(address: str, per_address: int, per_network: int) -> list[Limit]:
    return [Limit("join-address", address, per_address, 60),
            Limit("join-network", network_of(address), per_network, 60)]  # fmt: skip


@pytest.fixture
def joins(r: Any, keys: Keys) -> JoinLimits:
    return JoinLimits(r, keys, Scripts(r))


def outcome(joins: JoinLimits, limits: list[Limit], now: float) -> str | None:
    try:
        joins.hit(limits, network_of(limits[0].who), now)
    except Throttled as refused:
        return refused.scope
    return None


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(ADDRESSES), st.floats(0, 40, allow_nan=False)),
        min_size=1,
        max_size=60,
    ),
    per_address=st.integers(0, 6),
    per_network=st.integers(1, 9),
)
def test_the_script_decides_as_the_model(
    r: Any, keys: Keys, steps: list[tuple[str, float]], per_address: int, per_network: int
) -> None:
    r.flushall()
    joins, model, now = JoinLimits(r, keys, Scripts(r)), Model(), 1_000_000.0
    for address, gap in steps:
        now += gap
        limits = limits_of(address, per_address, per_network)
        assert outcome(joins, limits, now) == model.hit(limits, now), (address, now)


@settings(max_examples=300, deadline=None)
@given(
    amount=st.integers(0, 30),
    window=st.sampled_from([1, 60, 3600]),
    previous=st.integers(0, 60),
    current=st.integers(0, 60),
    share=st.floats(0, 0.999),
)
def test_retry_after_is_the_first_whole_second_a_join_passes(
    amount: int, window: int, previous: int, current: int, share: float
) -> None:
    """Refused now: after ``retry_after`` seconds (nobody else joining) a join passes,
    and one second earlier it would still have been refused (a limit of 0 refuses
    always: come back in a window)."""
    window_ms = window * 1000
    elapsed_ms = int(share * window_ms)
    counts = {499: previous, 500: current}  # the window before, the window now

    def passes(later_ms: int) -> bool:
        index, into = divmod(500 * window_ms + elapsed_ms + later_ms, window_ms)
        return not refuses(amount, counts.get(index - 1, 0), counts.get(index, 0), into,
                           window_ms)  # fmt: skip

    if passes(0):
        return  # nothing to wait for
    wait = retry_after(amount, window_ms, previous, current, elapsed_ms)
    if amount == 0:
        assert wait == window
        return
    assert wait >= 1 and passes(wait * 1000)
    assert wait == 1 or not passes((wait - 1) * 1000)


def test_a_refused_join_counts_nowhere(joins: JoinLimits, r: Any) -> None:
    """The network refuses: the address's counter is not raised either."""
    now = 1_000_000.0
    for i in range(3):
        outcome(joins, limits_of(f"203.0.113.{i}", 5, 3), now)
    before = sorted((k, r.get(k)) for k in r.keys("*"))
    assert outcome(joins, limits_of("203.0.113.9", 5, 3), now) == "join-network"
    assert sorted((k, r.get(k)) for k in r.keys("*")) == before


def test_a_throttled_join_says_when_to_come_back(joins: JoinLimits) -> None:
    now = 1_000_020.0  # 20 s into a minute
    limits = limits_of("192.0.2.1", 2, 100)
    assert [outcome(joins, limits, now) for _ in range(3)] == [None, None, "join-address"]
    with pytest.raises(Throttled) as refused:
        joins.hit(limits, network_of("192.0.2.1"), now)
    assert 1 <= refused.value.retry_after <= 120
    assert outcome(joins, limits, now + refused.value.retry_after) is None


def test_counters_expire_after_two_windows(joins: JoinLimits, r: Any) -> None:
    outcome(joins, limits_of("192.0.2.1", 5, 5), 1_000_000.0)
    ttls = [r.pttl(k) for k in r.keys("*")]
    assert len(ttls) == 2 and all(60_000 < t <= 120_000 for t in ttls)


def test_one_joins_keys_share_a_slot_on_a_cluster(db: Any) -> None:
    """An address's counters and its network's share the network's hash tag."""
    joins = JoinLimits(db, Keys("wrtest"), Scripts(db))
    for address in ("192.0.2.1", "2001:db8::5"):
        limits = [*limits_of(address, 2, 9), Limit("signup-address", address, 1, 3600)]
        assert [outcome(joins, limits, 1_000_000.0) for _ in range(2)] == [None, "signup-address"]


def test_networks_are_slash_24_and_slash_64() -> None:
    assert network_of("192.0.2.77") == "192.0.2.0/24"
    assert network_of("::ffff:192.0.2.77") == "192.0.2.0/24"
    assert network_of("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert network_of("unknown") == "unknown"
