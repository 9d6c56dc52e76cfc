"""Wait estimates from a room's statistics. Pure functions: no Redis, no Flask.

The statistics are the time-decayed counters that ``room_lib.lua`` keeps per event
kind: ``<event>:n`` (weight of observations), ``:s`` (weighted sum of values),
``:q`` (weighted sum of squares), ``:t`` (time of the last one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

TAU = 600.0  # the decay time constant of room_lib.lua
MIN_SAMPLES = 3.0  # fewer (decayed) seat releases than this: the wait is unknown


class Estimate(NamedTuple):
    wait: float  # expected seconds until admission
    variance: float  # of that wait, in seconds squared

    @property
    def spread(self) -> float:
        return math.sqrt(self.variance)


class Moments(NamedTuple):
    weight: float
    mean: float
    variance: float


def moments(stats: Mapping[str, float], event: str, now: float) -> Moments | None:
    """The decayed mean and variance of one event kind's values, as seen at ``now``."""
    n = stats.get(f"{event}:n", 0.0)
    last = stats.get(f"{event}:t", now)
    n *= math.exp(-max(now - last, 0.0) / TAU)
    if n <= 0:
        return None
    weight = stats.get(f"{event}:n", 0.0)
    mean = stats.get(f"{event}:s", 0.0) / weight
    variance = max(stats.get(f"{event}:q", 0.0) / weight - mean * mean, 0.0)
    return Moments(n, mean, variance)


def wait_for(stats: Mapping[str, float], now: float, ahead: int) -> Estimate | None:
    """Expected wait and variance for a visitor with ``ahead`` people in front.

    They are admitted at the (ahead + 1)-th seat release from now. Releases form a
    renewal process with the observed gap mean m and variance v, so the wait is a sum
    of ahead + 1 gaps: mean (ahead + 1) * m, variance (ahead + 1) * v.
    """
    gaps = moments(stats, "free", now)
    if gaps is None or gaps.weight < MIN_SAMPLES or gaps.mean <= 0:
        return None
    releases = ahead + 1
    return Estimate(releases * gaps.mean, releases * gaps.variance)


def max_ahead_for(stats: Mapping[str, float], now: float, max_wait: float) -> int | None:
    """Most people ahead a new joiner may have for its expected wait to stay within
    ``max_wait``; None when the wait cannot be estimated (nobody is refused then)."""
    gaps = moments(stats, "free", now)
    if gaps is None or gaps.weight < MIN_SAMPLES or gaps.mean <= 0:
        return None
    return max(int(max_wait / gaps.mean) - 1, 0)


def poll_after(dropout_seconds: float, position: int, estimate: Estimate | None) -> float:
    """Seconds within which a waiting visitor must check in again.

    At most half of ``dropout_seconds``, so one lost poll never costs the place; shorter
    near the head of the line so an offered seat is claimed quickly.
    """
    ceiling = dropout_seconds / 2
    if position <= 3:
        wanted = 2.0
    elif estimate is not None:
        wanted = estimate.wait / 4
    else:
        wanted = 1.0 + position / 2
    return round(min(ceiling, max(1.0, wanted)), 1)
