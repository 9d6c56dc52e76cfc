"""Wait estimates from a room's statistics. Pure functions: no Redis, no Flask.

The model and its assumptions are in ``docs/estimates.md``. In short: a visitor with k
people ahead is admitted at the J-th seat release from now, where J is one plus the
number of those k who are admitted rather than drop out (each stays with probability
``stay``). Seats are released at rate mu, measured two ways and combined: from the gaps
between releases while people wait, and as N / mean holding time. With c2(J) the
squared coefficient of variation of J releases (that of the gaps between releases over
a few, that of the holding times over many turns of every seat),

    wait = E[J] / mu        variance = (E[J] * c2(J) + Var[J]) / mu**2 + wait**2 * rate_error

The statistics are the time-decayed counters that ``room_lib.lua`` keeps per event kind:
``<event>:n`` (weight of observations), ``:s`` (weighted sum of values), ``:q`` (weighted
sum of squares) and ``:t`` (time of the last one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

TAU = 600.0  # seconds: the decay time constant of room_lib.lua
TAU_LONG = 3600.0  # seconds: ... of its long copies of the release statistics (".long")
MIN_HOLDS = 5.0  # fewer (decayed) finished seat holds than this: the wait is unknown
PRIOR_WEIGHT = 20.0  # c2 and cs2 are pulled toward the Markovian 1 as if by this many samples
MIN_AHEAD_SEEN = 20.0  # people-ahead observed before the realized share to stay is used
MIN_LINE_EXITS = 5.0  # fewer people left the line than this: assume nobody drops out
MAX_AHEAD = 10_000_000  # the largest line admission control searches
POLL_FLOOR = 1.0  # seconds: the shortest poll interval
SMOOTH_DOWN = 30.0  # seconds: time constant of a shown wait moving down to the estimate
SMOOTH_UP = 120.0  # seconds: ... and moving up (bad news is let in slowly)


class Estimate(NamedTuple):
    wait: float  # expected seconds until admission
    variance: float  # of that wait, in seconds squared

    @property
    def spread(self) -> float:
        return math.sqrt(self.variance)


class Moments(NamedTuple):
    """One event kind's decayed weight, sum and sum of squares, as seen at some time."""

    weight: float
    total: float
    squares: float

    @property
    def mean(self) -> float:
        return self.total / self.weight if self.weight > 0 else 0.0

    @property
    def variance(self) -> float:
        return max(self.squares / self.weight - self.mean**2, 0.0) if self.weight > 0 else 0.0


class Rates(NamedTuple):
    """What the estimator needs to know about a room, read from its statistics."""

    service: float  # seat releases per second while people wait (mu)
    c2: float  # squared coefficient of variation of the gaps between releases
    cs2: float  # squared coefficient of variation of seat holding times
    stay: float  # chance that a person in line is admitted rather than drops out
    capacity: int  # seats (N)
    rate_error: float  # relative variance of ``service`` (it is measured, not known)


def moments(stats: Mapping[str, float], event: str, now: float, tau: float = TAU) -> Moments:
    """The decayed figures of one event kind, decayed on to ``now``."""
    last = stats.get(f"{event}:t", now)
    w = math.exp(-max(now - last, 0.0) / tau)
    return Moments(
        stats.get(f"{event}:n", 0.0) * w,
        stats.get(f"{event}:s", 0.0) * w,
        stats.get(f"{event}:q", 0.0) * w,
    )


def markovian(weight: float, measured: float) -> float:
    """A squared coefficient of variation: 1 (Markovian) until samples say otherwise."""
    return (weight * measured + PRIOR_WEIGHT) / (weight + PRIOR_WEIGHT)


class Releases(NamedTuple):
    """How fast a full room frees seats, as measured over one window of the past."""

    gap: float  # mean seconds between releases (1 / mu)
    c2: float  # squared coefficient of variation of the gaps between releases
    cs2: float  # squared coefficient of variation of seat holding times
    error: float  # relative variance of ``gap`` (it is measured, not known)
    scatter: float  # the same from the variability measured alone (no Markovian prior)


def releases_seen(
    stats: Mapping[str, float], now: float, capacity: int, suffix: str = "", tau: float = TAU
) -> Releases | None:
    """The release rate measured by the statistics ``hold``, ``occupied`` and ``free``
    (with ``suffix``: the long copies), decayed with ``tau``; None below MIN_HOLDS.

    The mean gap between releases is measured two ways, combined by their precision
    (samples / squared variation): the gaps between releases while people wait ("free":
    they also see long holds still in progress), and the seat-seconds held per finished
    hold, over N (a full room of N releases N seats per mean hold; known before anyone
    waited; counted against the seat-seconds, not as the mean of finished holds, so a
    room that just filled up with fresh holds does not look faster than it is). Both
    count the same releases, so together they know no more than the larger count n: the
    rate's relative variance is that of a count of n releases, long_run / (2 n), 2 n
    being the effective sample size of n exponentially decayed samples.
    """
    hold = moments(stats, "hold" + suffix, now, tau)
    if hold.weight < MIN_HOLDS or hold.mean <= 0 or capacity <= 0:
        return None
    cs2 = markovian(hold.weight, hold.variance / hold.mean**2)
    mean_gap, c2 = hold.mean / capacity, 1.0
    held = moments(stats, "occupied" + suffix, now, tau)
    if held.total > 0:  # seat-seconds per finished hold: no bias while the room fills up
        mean_gap = held.total / hold.weight / capacity
    gaps = moments(stats, "free" + suffix, now, tau)
    if gaps.weight > 0 and gaps.mean > 0:
        c2 = markovian(gaps.weight, gaps.variance / gaps.mean**2)
        by_holds, by_gaps = hold.weight / cs2, gaps.weight / c2
        mean_gap = (mean_gap * by_holds + gaps.mean * by_gaps) / (by_holds + by_gaps)
    # A mean under exponentially decaying weights is worth twice its decayed count of
    # samples: (sum of w)**2 / (sum of w**2) = 2 n for a steady stream. The rate counts
    # releases per seat-second, so its error is that of a count of releases.
    count = 2.0 * max(hold.weight, gaps.weight)
    scatter = long_run_c2(hold.variance / hold.mean**2, capacity) / count
    return Releases(mean_gap, c2, cs2, long_run_c2(cs2, capacity) / count, scatter)


def steadier(recent: Releases, longer: Releases | None) -> Releases:
    """The recent release rate, moved toward the longer window's as far as the two agree.

    The longer window holds more releases, so it is the better measure while the pace
    holds, and the wrong one after a change. The two log gaps differ by ``shift``; were
    the pace unchanged, by noise of about the recent window's relative variance as its
    own releases scatter (``scatter``: without the Markovian prior, so regular holds
    that change show as a change at once). The longer window is trusted by
    1 / (1 + (z / 3)**8), z the shift in units of that noise: 0.96 at two sd, 0.5 at
    three, 0.09 at four, 0.02 at five. Noise alone rarely goes past three sd, and a
    real change of pace soon does, so it is followed at the recent window's speed.
    The error of the rate so taken is the longer window's plus the squared shift: a
    small change of pace cannot be told from noise, so the two windows' difference is
    part of what the rate may be off by.
    """
    if longer is None:
        return recent
    shift = math.log(longer.gap / recent.gap)
    z2 = shift * shift / recent.scatter if recent.scatter > 0 else math.inf
    if shift == 0.0:
        z2 = 0.0  # the windows agree exactly (even where the holds do not scatter)
    trust = 1.0 / (1.0 + (z2 / 9.0) ** 4)

    def blend(mine: float, theirs: float) -> float:
        return mine + trust * (theirs - mine)

    return Releases(
        recent.gap * math.exp(trust * shift),
        blend(recent.c2, longer.c2),
        blend(recent.cs2, longer.cs2),
        blend(recent.error, longer.error + shift * shift),
        recent.scatter,
    )


def rates(stats: Mapping[str, float], now: float, capacity: int) -> Rates | None:
    """The room's release rate, its variability and the chance to stay; None if unknown.

    The release rate is the recent one (``releases_seen``), moved toward that of the
    last hours while the two agree (``steadier``). The chance to stay is what joiners
    experienced: of the people ahead of each admitted joiner, the share let in before it
    ("ahead", weighted by their number); until enough of those are seen, the share of
    time spent in line by people who were then admitted.
    """
    recent = releases_seen(stats, now, capacity)
    if recent is None:
        return None
    seen = steadier(recent, releases_seen(stats, now, capacity, ".long", TAU_LONG))
    stay = 1.0
    ahead = moments(stats, "ahead", now)
    dropped, seated = moments(stats, "abandon", now), moments(stats, "waited", now)
    if ahead.weight >= MIN_AHEAD_SEEN:
        stay = min(max(ahead.total / ahead.weight, 0.0), 1.0)
    elif dropped.weight + seated.weight >= MIN_LINE_EXITS and dropped.total + seated.total > 0:
        stay = seated.total / (dropped.total + seated.total)
    return Rates(1.0 / seen.gap, seen.c2, seen.cs2, stay, capacity, seen.error)


def releases(ahead: int, stay: float) -> tuple[float, float]:
    """Mean and variance of J, the seat releases until a visitor with ``ahead`` in front
    is admitted: 1 + the number of those ahead who are admitted, each independently
    with probability ``stay`` (a binomial)."""
    ahead = max(ahead, 0)
    return 1.0 + ahead * stay, ahead * stay * (1.0 - stay)


def long_run_c2(cs2: float, capacity: int) -> float:
    """Variability of the releases of N busy seats over many releases: Whitt's queueing
    network analyser's departure formula for a full station, 1 + (cs2 - 1) / sqrt(N).
    One seat: its holds' cs2; many seats: toward a Poisson stream's 1, since a long hold
    blocks one seat of N while the others keep releasing."""
    return 1.0 + (cs2 - 1.0) / math.sqrt(max(capacity, 1))


def departure_c2(c2: float, cs2: float, capacity: int, count: float) -> float:
    """Squared coefficient of variation of the time until ``count`` seat releases.

    Over a few releases it is that of the gaps between releases (N seats in parallel
    release almost as a Poisson stream); over many, the long-run variability of the
    releases (``long_run_c2``): the hybrid of Whitt's queueing network analyser.
    """
    return (count * long_run_c2(cs2, capacity) + capacity * c2) / (count + capacity)


def wait_after(count_mean: float, count_var: float, service: float, c2: float) -> Estimate:
    """The wait for J releases of a stream of rate ``service`` and gap variability c2."""
    gap = 1.0 / service
    return Estimate(count_mean * gap, (count_mean * c2 + count_var) * gap * gap)


def wait_for(room: Rates, ahead: int) -> Estimate:
    """Expected wait and its variance for a visitor with ``ahead`` people in front."""
    count, spread = releases(ahead, room.stay)
    c2 = departure_c2(room.c2, room.cs2, room.capacity, count)
    guess = wait_after(count, spread, room.service, c2)
    # The measured rate scales the whole wait, so its error does too.
    return Estimate(guess.wait, guess.variance + guess.wait**2 * room.rate_error)


def max_ahead_for(room: Rates | None, max_wait: float) -> int | None:
    """Most people a new joiner may find ahead for the expected wait to stay within
    ``max_wait``: -1 refuses anyone who would wait; None when the wait is unknown
    (nobody is refused then)."""
    if room is None:
        return None
    if wait_for(room, 0).wait > max_wait:
        return -1
    lo, hi = 0, 1  # wait_for grows with ahead: find the last one within max_wait
    while wait_for(room, hi).wait <= max_wait:  # doubling first: lines are rarely long
        if hi >= MAX_AHEAD:
            return MAX_AHEAD
        lo, hi = hi, min(2 * hi, MAX_AHEAD)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wait_for(room, mid).wait <= max_wait:
            lo = mid
        else:
            hi = mid
    return lo


def retry_after(room: Rates | None, excess: int) -> int:
    """Seconds a refused joiner should wait before trying again: until ``excess`` people
    have left the line. Each leaves it through a seat release with the chance to stay,
    so that takes about ``excess * stay`` releases (at least one). Within 5 s and 10
    minutes; 60 s while the rate is unknown."""
    if room is None:
        return 60
    needed = max(excess * room.stay, 1.0)
    return round(min(max(needed / room.service, 5.0), 600.0))


def poll_after(dropout_seconds: float, position: int, estimate: Estimate | None) -> float:
    """Seconds within which a waiting visitor must check in again.

    Half the time to the likely-earliest admission (mean minus one sd), so far back
    polls are rare and near the head an offered seat is claimed quickly; never more
    than half of ``dropout_seconds``, so one lost poll never costs the place.
    """
    ceiling = dropout_seconds / 2
    if estimate is None:
        wanted = POLL_FLOOR + position / 2
    else:
        wanted = max(estimate.wait - estimate.spread, 0.0) / 2
    return round(min(ceiling, max(POLL_FLOOR, wanted)), 1)


class Shown(NamedTuple):
    """The wait last shown to a visitor, and when (carried by the client between polls)."""

    wait: float
    variance: float
    at: float

    def dumps(self) -> str:
        return f"{self.wait:.1f},{self.variance:.1f},{self.at:.1f}"

    @classmethod
    def loads(cls, text: str | None) -> Shown | None:
        """Parses ``dumps()``; None for anything else (it comes from the client)."""
        parts = (text or "").split(",")
        if len(parts) != 3 or len(text or "") > 80:
            return None
        try:
            wait, variance, at = (float(p) for p in parts)
        except ValueError:
            return None
        if not all(math.isfinite(x) and x >= 0 for x in (wait, variance, at)):
            return None
        return cls(wait, variance, at)


def smooth(previous: Shown | None, new: Estimate, now: float) -> Shown:
    """The figure to show now, given what was shown before and the new estimate.

    The old figure first counts down by the time passed, then moves toward the new
    estimate with a time constant: quickly down (good news), slowly up, so the figure
    neither jumps nor rises on every wobble of the measurements. Only what is shown is
    smoothed; the measurements and the estimate are left alone.
    """
    if previous is None:
        return Shown(new.wait, new.variance, now)
    passed = min(max(now - previous.at, 0.0), 10 * SMOOTH_UP)
    counted = max(previous.wait - passed, 0.0)
    tau = SMOOTH_DOWN if new.wait < counted else SMOOTH_UP
    keep = math.exp(-passed / tau)
    wait = new.wait + (counted - new.wait) * keep
    return Shown(wait, new.variance, now)
