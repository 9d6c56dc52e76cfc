"""How fast a room lets people in, measured from its statistics: the seat releases per
second, their variability, the chance that someone in line stays to be admitted, and
how far the pace moved lately. Pure functions: no Redis, no Flask; what a visitor is
told from these is ``webapp.domain.estimate``.

The statistics are the time-decayed counters that ``room_lib.lua`` keeps per event kind:
``<event>:n`` (weight of observations), ``:s`` (weighted sum of values), ``:q`` (weighted
sum of squares) and ``:t`` (time of the last one), as ``Reports.stats`` reads them. A
seat frees up once per ``turn`` seat-seconds, measured two ways and combined (the
seat-seconds held per finished hold, and between releases while people wait), so N
seats release at mu = N / turn, N being the capacity set now. ``turn`` is measured over
three windows of the past (2 minutes, 10 minutes, an hour): the longer ones count while
they agree with the shorter ones, so a change of pace is followed within minutes and a
steady pace is measured over the hour. ``drift`` comes from the model's own recent
prediction error: how far the last releases strayed from what the releases before them
said, beyond noise. The model is in ``docs/estimates.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

TAU = 600.0  # seconds: the decay time constant of room_lib.lua
TAU_SHORT = 120.0  # seconds: ... of its short copies of the release statistics (".short")
TAU_LONG = 3600.0  # seconds: ... of its long copies (".long")
MIN_HOLDS = 5.0  # fewer (decayed) finished seat holds than this: the wait is unknown
TYPICAL_ERROR = 0.25  # relative variance of a typical stay (an sd of half of it): a guess
PRIOR_WEIGHT = 20.0  # c2 and cs2 are pulled toward the Markovian 1 as if by this many samples
MIN_AHEAD_SEEN = 20.0  # people-ahead observed before the realized share to stay is used
MIN_LINE_EXITS = 5.0  # fewer people left the line than this: assume nobody drops out
LONG_TRUST = 3.0  # sd: the hour's pace is trusted by half at this distance from the recent
SHORT_TRUST = 4.0  # sd: ... and the recent windows' by half at this distance from the short
NOISE = 4.0  # squared sd: windows further apart than 2 sd of noise show a change of pace
DRIFT_GAIN = 12.0  # a pace that moved by d (in log) within the last T seconds may move
AGAIN = 2.0  # by sqrt(DRIFT_GAIN * wait / T) * d within a wait, at most by sqrt(AGAIN) * d

# The windows of the release statistics: field suffix -> decay time constant.
SHORT, RECENT, LONG = ".short", "", ".long"
WINDOWS = {SHORT: TAU_SHORT, RECENT: TAU, LONG: TAU_LONG}

Kernel = tuple[tuple[str, float], ...]  # (window suffix, coefficient): a weighting of the past


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
    drift: float = 0.0  # relative variance per second of wait: the pace may change meanwhile
    moved: float = 0.0  # ... and the most it adds to a wait's, however long
    basis: str = "measured"  # "typical": from the admin's typical stay, nothing measured


def moments(stats: Mapping[str, float], event: str, now: float, tau: float = TAU) -> Moments:
    """The decayed figures of one event kind, decayed on to ``now``."""
    last = stats.get(f"{event}:t", now)
    w = math.exp(-max(now - last, 0.0) / tau)
    return Moments(
        stats.get(f"{event}:n", 0.0) * w,
        stats.get(f"{event}:s", 0.0) * w,
        stats.get(f"{event}:q", 0.0) * w,
    )


def weighted(stats: Mapping[str, float], event: str, now: float, kernel: Kernel) -> Moments:
    """The figures of one event kind under a weighting of the past: a sum of windows,
    each times its coefficient. (The recent window less the short one, for instance,
    weighs the releases before the last few minutes: each release's weight in the
    longer window is at least its weight in the shorter.)"""
    weight = total = squares = 0.0
    for suffix, share in kernel:
        m = moments(stats, event + suffix, now, WINDOWS[suffix])
        weight, total, squares = (
            weight + share * m.weight,
            total + share * m.total,
            squares + share * m.squares,
        )
    return Moments(max(weight, 0.0), total, squares)


def overlap(a: Kernel, b: Kernel) -> float:
    """Sum over a steady stream of events (one a second) of the product of each event's
    weights under ``a`` and ``b``: the integral of the product of their exponentials."""
    return sum(
        x * y * WINDOWS[i] * WINDOWS[j] / (WINDOWS[i] + WINDOWS[j]) for i, x in a for j, y in b
    )


def extent(kernel: Kernel) -> float:
    """Sum of the weights of a steady stream of one event a second under ``kernel``."""
    return sum(share * WINDOWS[suffix] for suffix, share in kernel)


def markovian(weight: float, measured: float) -> float:
    """A squared coefficient of variation: 1 (Markovian) until samples say otherwise."""
    return (weight * measured + PRIOR_WEIGHT) / (weight + PRIOR_WEIGHT)


class Releases(NamedTuple):
    """How fast a full room frees seats, as measured under one weighting of the past."""

    turn: float  # seat-seconds per release: N seats release once per turn / N seconds
    c2: float  # squared coefficient of variation of the gaps between releases
    cs2: float  # squared coefficient of variation of seat holding times
    error: float  # relative variance of ``turn`` (it is measured, not known)
    scatter: float  # the same from the variability measured alone (no Markovian prior)
    seen: float  # decayed releases counted (n)
    kernel: Kernel = ((RECENT, 1.0),)

    @property
    def share(self) -> float:
        """Relative variance of the mean of ``seen`` Poisson releases under this
        weighting: overlap / (extent * seen); 1 / (2 n) for a single window."""
        return overlap(self.kernel, self.kernel) / (extent(self.kernel) * self.seen)


def releases_seen(
    stats: Mapping[str, float], now: float, capacity: int, kernel: Kernel = ((RECENT, 1.0),)
) -> Releases | None:
    """The release rate measured by the statistics ``hold``, ``occupied`` and ``busy``
    under ``kernel`` (one window, or a sum of them); None below MIN_HOLDS.

    The seat-seconds per release are measured two ways, combined by their precision
    (samples / squared variation): the seat-seconds held between releases while people
    wait ("busy": they also see long holds still in progress), and the seat-seconds held
    per finished hold (known before anyone waited; counted against the seat-seconds,
    not as the mean of finished holds, so a room that just filled up with fresh holds
    does not look faster than it is). Per seat, so a room measured at one capacity
    knows its pace at another. Both count the same releases, so together they know no
    more than the larger count n: the rate's relative variance is that of a count of n
    releases, long_run * share (share = 1 / (2 n) for one window, 2 n being the
    effective sample size of n exponentially decayed samples).
    """
    hold = weighted(stats, "hold", now, kernel)
    if hold.weight < MIN_HOLDS or hold.mean <= 0 or capacity <= 0:
        return None
    cs2 = markovian(hold.weight, hold.variance / hold.mean**2)
    turn, c2 = hold.mean, 1.0
    held = weighted(stats, "occupied", now, kernel)
    if held.total > 0:  # seat-seconds per finished hold: no bias while the room fills up
        turn = held.total / hold.weight
    busy = weighted(stats, "busy", now, kernel)
    if busy.weight > 0 and busy.mean > 0:
        c2 = markovian(busy.weight, busy.variance / busy.mean**2)
        by_holds, by_gaps = hold.weight / cs2, busy.weight / c2
        turn = (turn * by_holds + busy.mean * by_gaps) / (by_holds + by_gaps)
    count = max(hold.weight, busy.weight)
    share = overlap(kernel, kernel) / (extent(kernel) * count)
    scatter = long_run_c2(hold.variance / hold.mean**2, capacity) * share
    return Releases(turn, c2, cs2, long_run_c2(cs2, capacity) * share, scatter, count, kernel)


def apart(a: Releases, b: Releases, capacity: int) -> float:
    """The variance of ln(a.turn / b.turn) were the pace the same throughout: the two
    measures' noise less twice their covariance (they may count the same releases)."""
    both = overlap(a.kernel, b.kernel) / math.sqrt(
        extent(a.kernel) * a.seen * extent(b.kernel) * b.seen
    )
    return long_run_c2(a.cs2, capacity) * (a.share + b.share - 2 * both)


def trust(z2: float, sd: float) -> float:
    """How far a longer window is taken, at z2 squared sd from a shorter one: 1 / (1 +
    (z / sd)**8); with sd = 3: 0.96 at 2 sd, 0.5 at 3, 0.09 at 4, 0.02 at 5."""
    return 1.0 / (1.0 + (z2 / (sd * sd)) ** 4)


def toward(mine: Releases, theirs: Releases, share: float, error: float) -> Releases:
    """``mine`` moved by ``share`` toward ``theirs`` (in the log of the turn), with the
    error ``error`` of ``theirs`` so taken."""

    def blend(a: float, b: float) -> float:
        return a + share * (b - a)

    return mine._replace(
        turn=mine.turn * (theirs.turn / mine.turn) ** share,
        c2=blend(mine.c2, theirs.c2),
        cs2=blend(mine.cs2, theirs.cs2),
        error=blend(mine.error, error),
    )


def steadier(recent: Releases, longer: Releases | None) -> Releases:
    """The recent release rate, moved toward the longer window's as far as the two agree.

    The longer window holds more releases, so it is the better measure while the pace
    holds, and the wrong one after a change. The two log turns differ by ``shift``; were
    the pace unchanged, by noise of about the recent window's relative variance as its
    own releases scatter (``scatter``: without the Markovian prior, so regular holds
    that change show as a change at once). The longer window is trusted by
    ``trust(z2, LONG_TRUST)``, z the shift in units of that noise: 0.96 at two sd, 0.5
    at three, 0.09 at four. Noise alone rarely goes past three sd, and a real change
    of pace soon does, so it is followed at the recent window's speed. The error of
    the rate so taken is the longer window's plus the squared shift: a small change of
    pace cannot be told from noise, so the two windows' difference is part of what the
    rate may be off by.
    """
    if longer is None:
        return recent
    shift = math.log(longer.turn / recent.turn)
    z2 = shift * shift / recent.scatter if recent.scatter > 0 else math.inf
    if shift == 0.0:
        z2 = 0.0  # the windows agree exactly (even where the holds do not scatter)
    return toward(recent, longer, trust(z2, LONG_TRUST), longer.error + shift * shift)


def sharper(short: Releases | None, model: Releases, recent: Releases, capacity: int) -> Releases:
    """The last two minutes' release rate, moved toward ``model`` (the longer windows')
    as far as the two agree: a change of pace shows in the short window first.

    The short window holds few releases, so it takes over only from SHORT_TRUST (4) sd
    of the noise expected between it and the recent window (``apart``), which noise
    alone hardly ever reaches. The error keeps the squared shift beyond two sd of that
    noise: a shift inside it is noise, already in the longer windows' error.
    """
    if short is None:
        return model
    shift = math.log(model.turn / short.turn)
    noise = apart(short, recent, capacity)
    z2 = shift * shift / noise if noise > 0 else math.inf
    beyond = max(shift * shift - NOISE * noise, 0.0)
    return toward(short, model, trust(z2, SHORT_TRUST), model.error + beyond)._replace(
        scatter=model.scatter, seen=model.seen, kernel=model.kernel
    )


def strayed(newer: Releases | None, older: Releases | None, capacity: int) -> float:
    """The model's prediction error on the newer releases: the squared log difference
    between them and the releases before them, beyond two sd of noise (how far the
    pace moved lately)."""
    if newer is None or older is None:
        return 0.0
    shift = math.log(newer.turn / older.turn)
    return max(shift * shift - NOISE * apart(newer, older, capacity), 0.0)


def rates(
    stats: Mapping[str, float],
    now: float,
    capacity: int,
    typical: float | None = None,
    email_claim: float = 0.0,
) -> Rates | None:
    """The room's release rate, its variability and the chance to stay; None if unknown.

    The seat-seconds per release are the recent window's (``releases_seen``), moved
    toward the last hour's while the two agree (``steadier``), then the last two
    minutes' moved toward that while those agree (``sharper``). ``drift`` is how fast
    the pace moved lately: the larger of the last two minutes against the ten before
    them, and the last ten minutes against the hour before them (``strayed``). The
    chance to stay is what joiners experienced: of the people ahead of each admitted
    joiner, the share let in before it ("ahead", weighted by their number); until
    enough of those are seen, the share of time spent in line by people who were then
    admitted.

    ``typical``: the room's ``typical_stay_seconds`` (seat-seconds per release: an
    admin's, or the table's default). Until MIN_HOLDS holds are measured it alone gives
    the pace (basis "typical"); from then on the measured pace alone does (basis
    "measured"), so that a default far from the room's real stays never biases what is
    measured. A typical stay is the time a seat is used; its offer held it a while
    before: ``offer_hold`` adds what the offers to people in line who gave an email may
    hold (``email_claim``: the room's ``email_claim_seconds``). Measured holds count
    their offers already.
    """
    recent = releases_seen(stats, now, capacity)
    if recent is None:
        if typical is None or typical <= 0 or capacity <= 0:
            return None
        turn = typical + offer_hold(stats, email_claim)
        return Rates(capacity / turn, 1.0, 1.0, stay_share(stats, now), capacity,
                     TYPICAL_ERROR, basis="typical")  # fmt: skip
    longer = releases_seen(stats, now, capacity, ((LONG, 1.0),))
    short = releases_seen(stats, now, capacity, ((SHORT, 1.0),))
    seen = sharper(short, steadier(recent, longer), recent, capacity)
    # The releases before the newer ones: each window less the next shorter one.
    lately = releases_seen(stats, now, capacity, ((RECENT, 1.0), (SHORT, -1.0)))
    earlier = releases_seen(stats, now, capacity, ((LONG, 1.0), (RECENT, -1.0)))
    # The two are TAU and TAU_LONG apart (the mean ages of the two weightings).
    minutes, hour = strayed(short, lately, capacity), strayed(recent, earlier, capacity)
    drift = DRIFT_GAIN * max(minutes / TAU, hour / TAU_LONG)
    moved = AGAIN * max(minutes, hour)
    stay = stay_share(stats, now)
    return Rates(capacity / seen.turn, seen.c2, seen.cs2, stay, capacity, seen.error, drift, moved)


def offer_hold(stats: Mapping[str, float], email_claim: float) -> float:
    """Seat-seconds an offer holds its seat before it is taken, expected per release,
    beyond a typical stay: an open page takes its offer within a poll (about a second
    near the head), but a seat offered to someone who gave an email is held up to
    ``email_claim`` seconds (room_lib.lua offer_window()) for the email's link. Who of
    them closes their pages, and when they come back, is not known before offers are
    measured, so each such offer counts its whole window (an upper bound: a late taker;
    one that lapses frees its seat without a stay), weighted by the share of the line
    that gave an email ("line:emails" of "line:waiting")."""
    waiting = stats.get("line:waiting", 0.0)
    if waiting <= 0 or email_claim <= 0:
        return 0.0
    emailed = min(max(stats.get("line:emails", 0.0), 0.0), waiting)
    return email_claim * emailed / waiting


def stay_share(stats: Mapping[str, float], now: float) -> float:
    """The chance that a person in line is admitted rather than drops out (``rates``)."""
    ahead = moments(stats, "ahead", now)
    dropped, seated = moments(stats, "abandon", now), moments(stats, "waited", now)
    if ahead.weight >= MIN_AHEAD_SEEN:
        return min(max(ahead.total / ahead.weight, 0.0), 1.0)
    if dropped.weight + seated.weight >= MIN_LINE_EXITS and dropped.total + seated.total > 0:
        return seated.total / (dropped.total + seated.total)
    return 1.0


def long_run_c2(cs2: float, capacity: int) -> float:
    """Variability of the releases of N busy seats over many releases: Whitt's queueing
    network analyser's departure formula for a full station, 1 + (cs2 - 1) / sqrt(N).
    One seat: its holds' cs2; many seats: toward a Poisson stream's 1, since a long hold
    blocks one seat of N while the others keep releasing."""
    return 1.0 + (cs2 - 1.0) / math.sqrt(max(capacity, 1))


def limited(room: Rates | None, per_minute: int | None) -> Rates | None:
    """The rates of a room whose ``admit_per_minute`` caps its admissions: seats may free
    up faster than that, but nobody is let in faster (room_lib.lua's admissions_left),
    so the wait is worked out at the slower of the two paces."""
    if room is None or per_minute is None or room.service <= per_minute / 60.0:
        return room
    return room._replace(service=per_minute / 60.0)
