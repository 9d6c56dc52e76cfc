"""Wait estimates from a room's statistics. Pure functions: no Redis, no Flask.

The model and its assumptions are in ``docs/estimates.md``. In short: a visitor with k
people ahead is admitted at the J-th seat release from now, where J is one plus the
number of those k who are admitted rather than drop out (each stays with probability
``stay``). A seat frees up once per ``turn`` seat-seconds, measured two ways and
combined (the seat-seconds held per finished hold, and between releases while people
wait), so N seats release at mu = N / turn, N being the capacity set now: a change of
capacity counts at once. With c2(J) the squared coefficient of variation of J releases
(that of the gaps between releases over a few, that of the holding times over many
turns of every seat),

    wait = E[J] / mu        variance = (E[J] * c2(J) + Var[J]) / mu**2
                                       + wait**2 * (rate_error + min(drift * wait, moved))

(plus, while more seats are taken than the capacity, the time for the excess to free
up). The pace (mu, its variability and error, ``drift``) is measured from the room's
statistics by ``webapp.domain.pace``; ``drift`` widens the range after a change of pace
(up to ``moved``), since a pace that just changed may change again within the wait.
This module also smooths the figure shown from one poll to the next, and says when the
line slowed down or sped up.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from webapp.domain.pace import Rates, long_run_c2

MAX_AHEAD = 10_000_000  # the largest line admission control searches
POLL_FLOOR = 1.0  # seconds: the shortest poll interval
SMOOTH_DOWN = 30.0  # seconds: time constant of a shown wait moving down to the estimate
SMOOTH_UP = 120.0  # seconds: ... and moving up (bad news is let in slowly)
TREND_SHARE = 0.1  # a release rate this much under (over) the one of the figure shown
#                    before: the line has slowed down (sped up)


class Estimate(NamedTuple):
    wait: float  # expected seconds until admission
    variance: float  # of that wait, in seconds squared

    @property
    def spread(self) -> float:
        return math.sqrt(self.variance)

    @property
    def range(self) -> tuple[float, float]:
        """The likely wait: one standard deviation either side (never below 0)."""
        spread = self.spread
        return max(self.wait - spread, 0.0), self.wait + spread


def releases(ahead: int, stay: float) -> tuple[float, float]:
    """Mean and variance of J, the seat releases until a visitor with ``ahead`` in front
    is admitted: 1 + the number of those ahead who are admitted, each independently
    with probability ``stay`` (a binomial)."""
    ahead = max(ahead, 0)
    return 1.0 + ahead * stay, ahead * stay * (1.0 - stay)


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


def wait_for(room: Rates, ahead: int, seated: int = 0) -> Estimate:
    """Expected wait and its variance for a visitor with ``ahead`` people in front, in
    a room where ``seated`` seats are taken.

    More seats taken than the capacity (an admin just lowered it): nobody is let in
    until the excess has left, each release of the h seats then held coming after
    turn / h seconds on average (exponential holds). The measured rate scales the
    whole wait, so its error does too, and so does a change of pace during the wait,
    the more the longer the wait (``drift``)."""
    count, spread = releases(ahead, room.stay)
    c2 = departure_c2(room.c2, room.cs2, room.capacity, count)
    guess = wait_after(count, spread, room.service, c2)
    wait, variance = guess.wait, guess.variance
    turn = room.capacity / room.service
    for held in range(seated, room.capacity, -1):
        wait, variance = wait + turn / held, variance + (turn / held) ** 2
    return Estimate(
        wait, variance + wait**2 * (room.rate_error + min(room.drift * wait, room.moved))
    )


CHANCE_WITHIN = 300.0  # seconds: the span random order's chance of a seat is told for


class SeatChance(NamedTuple):
    """Under random order: the chance (0 to 1) of a seat within ``within`` seconds."""

    within: float
    chance: float


def seat_chance(room: Rates, waiting: int, within: float = CHANCE_WITHIN) -> SeatChance:
    """The chance that one person among ``waiting`` in a line under random order is
    drawn for a seat within ``within`` seconds. About ``service * within`` seats free up
    meanwhile, each drawn among those waiting without putting anyone back, so a given
    person is among them with chance draws / waiting (capped at 1). Newcomers joining
    meanwhile lower it and dropouts raise it; the figure is read afresh at every poll."""
    draws = room.service * within
    return SeatChance(within, min(1.0, draws / max(waiting, 1)))


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


def poll_margin(dropout_seconds: float, window: float) -> float:
    """Seconds a check-in window keeps beyond ``poll_after``: ``dropout_seconds``, the
    time the room already lets anyone at its head go unseen, or half the window where
    that is less (near the head, where the window is ``dropout_seconds``, the rule of
    old: a poll at half of it, so one whole poll may be lost). It covers the reply's
    way back and a lost poll tried again: the waiting page retries a failed poll after
    0.5 to 1 s, then 1 to 2, 2 to 4 and 2.5 to 5 s (static/js/waiting.js), so the 30 s
    of the default hold at least six tries; an API client is told to do the same
    (docs/api.md). Far back it costs 30 s of a 300 s window, where half the window cost
    150 s: 1,000,000 in line poll 3,700 times a second instead of 6,700 (the rest of
    the line, near the head, the same as before; bench/windows_sim.py)."""
    return min(dropout_seconds, window / 2)


def poll_after(
    dropout_seconds: float, position: int, estimate: Estimate | None, window: float = 0.0
) -> float:
    """Seconds within which a waiting visitor must check in again.

    Half the time to the likely-earliest admission (mean minus one sd), so far back
    polls are rare and near the head an offered seat is claimed quickly; never later
    than the check-in window the script just granted (``window``: 0 = none granted,
    then ``dropout_seconds``) less a margin (``poll_margin``), so a poll lost on the
    way and tried again within the margin never costs the place.
    """
    granted = window if window > 0 else dropout_seconds
    ceiling = granted - poll_margin(dropout_seconds, granted)
    wanted = POLL_FLOOR + position / 2 if estimate is None else estimate.range[0] / 2
    return round(min(ceiling, max(POLL_FLOOR, wanted)), 1)


class Shown(NamedTuple):
    """The wait last shown to a visitor, and when (carried by the client between polls),
    with the release rate it stands for (0: not known)."""

    wait: float
    variance: float
    at: float
    pace: float = 0.0  # releases per second the figure was made at, smoothed as it is

    def dumps(self) -> str:
        text = f"{self.wait:.1f},{self.variance:.1f},{self.at:.1f}"
        return f"{text},{self.pace:.6g}" if self.pace > 0 else text

    @classmethod
    def loads(cls, text: str | None) -> Shown | None:
        """Parses ``dumps()`` (also without the pace); None for anything else (it comes
        from the client)."""
        parts = (text or "").split(",")
        if len(parts) not in (3, 4) or len(text or "") > 80:
            return None
        try:
            figures = [float(p) for p in parts]
        except ValueError:
            return None
        if not all(math.isfinite(x) and x >= 0 for x in figures):
            return None
        return cls(*figures)


def trend(previous: Shown | None, pace: float) -> str | None:
    """Whether the line moves slower or faster than when the figure shown before was
    made: "slower" when its release rate ``pace`` is TREND_SHARE under the rate that
    figure stands for, "faster" when as much over; None otherwise, and with nothing
    shown before. The rate a figure stands for is smoothed as the figure is, so while a
    figure rises toward a slower line's estimate, the trend keeps saying why."""
    if previous is None or previous.pace <= 0 or pace <= 0:
        return None
    if pace * (1 + TREND_SHARE) < previous.pace:
        return "slower"
    if pace > previous.pace * (1 + TREND_SHARE):
        return "faster"
    return None


def smooth(previous: Shown | None, new: Estimate, now: float, pace: float = 0.0) -> Shown:
    """The figure to show now, given what was shown before and the new estimate, made
    at the release rate ``pace``.

    The old figure first counts down by the time passed, then moves toward the new
    estimate with a time constant: quickly down (good news), slowly up, so the figure
    neither jumps nor rises on every wobble of the measurements. The rate it stands for
    moves with it, by the same share. Only what is shown is smoothed; the measurements
    and the estimate are left alone.
    """
    if previous is None:
        return Shown(new.wait, new.variance, now, pace)
    passed = min(max(now - previous.at, 0.0), 10 * SMOOTH_UP)
    counted = max(previous.wait - passed, 0.0)
    tau = SMOOTH_DOWN if new.wait < counted else SMOOTH_UP
    keep = math.exp(-passed / tau)
    wait = new.wait + (counted - new.wait) * keep
    if previous.pace > 0 and pace > 0:
        pace = pace * (previous.pace / pace) ** keep  # in log: rates are ratios
    return Shown(wait, new.variance, now, pace)
