"""Plan a drop before it happens (issue 34): how long people will wait, when the stock
runs out, and what the line costs. Pure functions: no Redis, no Flask, no clock.

A discrete-event simulation of the engine's rules on counts rather than people: time
moves in steps of ``dt`` seconds (1 s unless the line would last for more than
MAX_STEPS of them), each step's arrivals join the line as one cohort, and seats freed in
a step go to the line in the engine's order (``queueing_method``):

- ``fifo``: the oldest cohort first (``room_lib.lua``'s ``promote``: the head of the line).
- ``random``: every person in line as likely as any other, so each waiting cohort gets
  its share of the step's admissions (waits spread out: some are let in at once, some
  wait far longer than in line order).
- ``passthrough``: everyone is let in on arrival (no waits, seats past the capacity).
- ``reject``: an arrival who finds no free seat is refused (no line).

Admissions stop while the seats are all taken, once ``admit_per_minute`` let that many
in during the minute (minutes counted from the start, as the engine counts clock
minutes), and for good once the stock is sold. A person let in holds the seat for a
stay drawn from the stay distribution (``STAY_POINTS`` equally likely values), and it
frees at the end of it. People who leave the line before their turn (``leave_share`` of
those who wait) never take a seat; they stop checking in ``patience_seconds`` after
they joined (or when the line reaches them) and then no longer count as waiting.

Counts are fractional (expected values), so a million arrivals cost what a few thousand
steps cost: ``tests/unit/test_planner.py`` holds it to the closed form of a steady line
and to the engine's own run; ``bench/plan_replay.py`` replays plans against the app.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from webapp.domain import estimate, windows
from webapp.domain.pace import Rates

QueueingMethod = Literal["fifo", "random", "passthrough", "reject"]
QUEUEING_METHODS: tuple[QueueingMethod, ...] = ("fifo", "random", "passthrough", "reject")
MAX_STEPS = 8_000  # time steps of a plan: longer lines are simulated in longer steps
MAX_ARRIVALS = 100_000_000  # people in one plan
MAX_ROWS = 1440  # rows of by_minute: a longer plan's rows span several minutes each
RANDOM_POINTS = 400  # random order: waits of a cohort worked out at this many times
STAY_POINTS = 16  # equally likely stays the stay distribution is drawn as
ROUNDS = 50  # admissions within one step, as seats of short stays free up within it,
AGAIN = 0.01  # while at least this share of the seats freed again
NICE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
# Sizing (docs/operations.md, "How many hosts"): measured per check-in at 100,000
# waiting with the fixed costs included, at 70% of each core of two-core hosts.
APP_SECONDS_PER_CHECKIN = 0.0009
REDIS_SECONDS_PER_CHECKIN = 0.00017
JOIN_COST = 2.0  # a join costs about two check-ins (a new ticket, its statistics)
HOST_CORES, BUSY_SHARE = 2, 0.7
SOCKETS_PER_HOST = 2000  # seated visitors' sockets: 2 workers x 1000 connections
SMALL = 1e-9  # counts below this are nobody


@dataclass(frozen=True)
class PlanInput:
    """What a plan assumes; every figure has a default from the room (``for_room``)."""

    arrivals: tuple[tuple[int, float], ...]  # (second from the start, people arriving)
    capacity: int
    stay_seconds: float  # mean seat time
    stay_cs2: float = 1.0  # squared variation of stays: 0 all alike, 1 exponential
    admit_per_minute: int | None = None
    leave_share: float = 0.0  # of those who wait, the share who leave before their turn
    patience_seconds: float = 300.0  # when such a one stops checking in, after joining
    stock: int | None = None
    units_per_admission: int = 1
    prequeue: int = 0  # people in the pre-queue at the start (placed at the head)
    queueing_method: QueueingMethod = "fifo"
    dropout_seconds: int = 30
    max_checkin_seconds: int = 300


Row = tuple[int, float, float, float, float | None]  # minute, arrivals, admitted, line, p50


@dataclass(frozen=True)
class Waits:
    p50: float
    p90: float
    p99: float
    max: float


@dataclass(frozen=True)
class Plan:
    """A plan's answer (``as_dict``: the API's)."""

    waits: Waits
    by_minute: list[Row]
    sold_out_minute: int | None
    served_share: float
    peak_checkins_per_second: float
    hosts: dict[str, float]
    arrivals: float
    step_seconds: int
    refused: float = 0.0
    unserved: float = 0.0  # still waiting when the stock ran out or the plan ended
    finished: bool = True  # the line emptied within the plan's steps

    def as_dict(self) -> dict[str, object]:
        return {
            "waits": {k: round(v, 1) for k, v in vars(self.waits).items()},
            "by_minute": [
                [m, round(a, 2), round(d, 2), round(line, 2), None if w is None else round(w, 1)]
                for m, a, d, line, w in self.by_minute
            ],
            "sold_out_minute": self.sold_out_minute,
            "served_share": round(self.served_share, 4),
            "peak_checkins_per_second": round(self.peak_checkins_per_second, 1),
            "hosts": self.hosts,
            "arrivals": round(self.arrivals, 2),
            "refused": round(self.refused, 2),
            "unserved": round(self.unserved, 2),
            "step_seconds": self.step_seconds,
            "finished": self.finished,
        }


def shaped_arrivals(
    total: int, first_minute_share: float, duration: int
) -> list[tuple[int, float]]:
    """``total`` people: ``first_minute_share`` of them evenly over the first minute, the
    rest evenly over the remaining ``duration - 60`` seconds (all in the first minute
    when ``duration`` is a minute or less)."""
    duration = max(int(duration), 1)
    first = min(duration, 60)
    share = 1.0 if duration <= 60 else min(max(first_minute_share, 0.0), 1.0)
    out = [(s, total * share / first) for s in range(first)]
    rest = duration - first
    out += [(first + s, total * (1 - share) / rest) for s in range(rest)]
    return [(s, n) for s, n in out if n > 0]


def stay_points(mean: float, cs2: float, points: int = STAY_POINTS) -> list[float]:
    """``points`` equally likely stays of mean ``mean`` and squared variation ``cs2``:
    all alike (0), exponential (1), lognormal otherwise; scaled to the exact mean."""
    if cs2 <= 1e-6 or mean <= 0:
        return [max(mean, 0.0)]
    qs = [(i + 0.5) / points for i in range(points)]
    if abs(cs2 - 1.0) < 1e-6:
        values = [-math.log(1 - q) for q in qs]
    else:
        sigma = math.sqrt(math.log(1 + cs2))
        values = [math.exp(sigma * _normal_quantile(q)) for q in qs]
    scale = mean / (sum(values) / points)
    return [v * scale for v in values]


def _normal_quantile(q: float) -> float:
    """The standard normal's quantile, by bisection (a few dozen points per plan)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):  # bisection: plenty for 24 points
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def in_steps(stays: Sequence[float], dt: int) -> list[tuple[int, float]]:
    """Stays in whole steps with their weights: each stay split between the steps either
    side of it so that the mean stays exact (a stay shorter than a step may end in it)."""
    out: dict[int, float] = {}
    for stay in stays:
        steps = stay / dt
        low = math.floor(steps)
        out[low] = out.get(low, 0.0) + (low + 1 - steps) / len(stays)
        out[low + 1] = out.get(low + 1, 0.0) + (steps - low) / len(stays)
    return [(k, w) for k, w in sorted(out.items()) if w > 0]


def step_for(plan: PlanInput, total: float) -> int:
    """The step: 1 s unless the line, drained at the pace the seats allow, would need
    more than MAX_STEPS of them."""
    pace = plan.capacity / max(plan.stay_seconds, 1.0)
    if plan.admit_per_minute:
        pace = min(pace, plan.admit_per_minute / 60)
    last = max((s for s, _ in plan.arrivals), default=0)
    served = total if plan.stock is None else min(total, plan.stock / plan.units_per_admission)
    horizon = last + served / max(pace, SMALL) + plan.stay_seconds
    for dt in NICE_STEPS:
        if horizon / dt <= MAX_STEPS:
            return dt
    return NICE_STEPS[-1]


@dataclass
class Cohort:
    """The people who arrived in one step and wait."""

    step: int
    stayers: float  # still waiting, and will stay for their turn
    leavers: float  # still waiting, but will leave before their turn
    row: int  # their by_minute row
    kept: float = 0.0  # random order: the line's log share kept when they joined


@dataclass
class Tally:
    """What the steps add up: waits (steps waited -> people), and per row."""

    waits: dict[int, float] = field(default_factory=dict)
    row_waits: dict[int, dict[int, float]] = field(default_factory=dict)
    arrived: dict[int, float] = field(default_factory=dict)
    admitted: dict[int, float] = field(default_factory=dict)
    line: dict[int, float] = field(default_factory=dict)
    served: float = 0.0
    refused: float = 0.0

    def admit(self, cohort: Cohort, now: int, people: float) -> None:
        wait = now - cohort.step
        self.waits[wait] = self.waits.get(wait, 0.0) + people
        row = self.row_waits.setdefault(cohort.row, {})
        row[wait] = row.get(wait, 0.0) + people


@dataclass
class Seats:
    """The seats: taken, freeing at the end of each stay, and what may be let in now."""

    capacity: int
    unlimited: bool  # passthrough: everyone in, whatever the capacity
    per_minute: float | None  # admissions a minute at most
    sellable: float  # admissions the stock allows
    stays: list[tuple[int, float]]  # (steps, share)
    tally: Tally
    taken: float = 0.0
    used: float = 0.0  # admissions in the current minute
    minute_of: int = -1
    frees: dict[int, float] = field(default_factory=dict)

    def free(self, now: int) -> float:
        """Frees the seats whose stays end in step ``now``; returns how many."""
        back = self.frees.pop(now, 0.0)
        self.taken = max(self.taken - back, 0.0)
        return back

    def minute(self, minute: int) -> None:
        if minute != self.minute_of:
            self.minute_of, self.used = minute, 0.0

    def room(self) -> float:
        free = math.inf if self.unlimited else max(self.capacity - self.taken, 0.0)
        if self.per_minute is not None:
            free = min(free, self.per_minute - self.used)
        return max(min(free, self.sellable - self.tally.served), 0.0)

    def seat(self, now: int, row: int, people: float) -> None:
        self.tally.served += people
        self.used += people
        self.taken += people
        self.tally.admitted[row] = self.tally.admitted.get(row, 0.0) + people
        for steps, share in self.stays:
            self.frees[now + steps] = self.frees.get(now + steps, 0.0) + people * share


@dataclass
class Line:
    """The people waiting: cohorts in arrival order, and the random order's record."""

    method: QueueingMethod
    cohorts: deque[Cohort] = field(default_factory=deque)
    joined: list[Cohort] = field(default_factory=list)  # random: every cohort, kept
    stayers: float = 0.0
    leavers: float = 0.0
    kept: list[float] = field(default_factory=lambda: [0.0])  # random: log share kept by step

    def join(self, cohort: Cohort) -> None:
        cohort.kept = self.kept[-1]
        self.stayers += cohort.stayers
        self.leavers += cohort.leavers
        (self.joined if self.method == "random" else self.cohorts).append(cohort)

    def give_up(self, cohort: Cohort) -> None:
        self.leavers -= cohort.leavers
        cohort.leavers = 0.0

    def let_in(self, now: int, room: float, tally: Tally) -> None:
        """``room`` people let in: the oldest first (fifo), or each stayer as likely as
        any other (random: each cohort keeps the same share, worked out at the end)."""
        self.stayers -= room
        if self.method == "random":
            self.kept[-1] += math.log(max(1.0 - room / (self.stayers + room), 1e-30))
            return
        while room > SMALL and self.cohorts:
            cohort = self.cohorts[0]
            take = min(cohort.stayers, room)
            cohort.stayers -= take
            room -= take
            if take > 0:
                tally.admit(cohort, now, take)
            if cohort.stayers <= SMALL:  # the line reached its leavers: gone by then
                self.give_up(cohort)
                self.cohorts.popleft()

    def step(self) -> None:
        """A new step: kept[a] is the log share kept before step a's admissions."""
        if self.method == "random":
            self.kept.append(self.kept[-1])

    def random_waits(self, tally: Tally) -> None:
        """The random order's waits: a cohort that joined at step a, of s stayers, had
        s * (1 - K(a + w) / K(a)) let in within w steps, K the share kept."""
        kept, last = self.kept, len(self.kept) - 2  # the last step simulated
        for cohort in self.joined:
            before = 1.0
            stride = max(1, (last - cohort.step) // RANDOM_POINTS)  # waits to a 400th
            for now in [*range(cohort.step, last, stride), last]:
                share = math.exp(kept[now + 1] - cohort.kept)
                if before - share > SMALL:
                    tally.admit(cohort, now, cohort.stayers * (before - share))
                before = share
                if share < 1e-7:
                    break


def simulate(plan: PlanInput) -> Plan:
    """The plan's answer: see the module's docstring."""
    total = sum(max(n, 0.0) for _, n in plan.arrivals) + plan.prequeue
    if total > MAX_ARRIVALS:
        raise ValueError("too many arrivals")
    dt = step_for(plan, total)
    per_step: dict[int, float] = {}
    for s, n in plan.arrivals:
        per_step[max(int(s), 0) // dt] = per_step.get(max(int(s), 0) // dt, 0.0) + max(n, 0.0)
    if plan.prequeue:
        per_step[0] = per_step.get(0, 0.0) + plan.prequeue
    last_arrival = max(per_step, default=0)
    end = last_arrival + MAX_STEPS
    row_steps = max(1, math.ceil(60 / dt))  # steps per by_minute row
    while end // row_steps + 1 > MAX_ROWS:
        row_steps *= 2
    stays = in_steps(stay_points(plan.stay_seconds, plan.stay_cs2), dt)
    giving_up: dict[int, list[Cohort]] = {}  # leavers' patience ends
    # admit_per_minute holds per minute; a step longer than a minute spans several
    per_minute = None if plan.admit_per_minute is None else plan.admit_per_minute * max(dt, 60) / 60
    sellable = math.inf if plan.stock is None else plan.stock // max(plan.units_per_admission, 1)
    patience = max(1, round(plan.patience_seconds / dt))
    leave = min(max(plan.leave_share, 0.0), 1.0)
    method = plan.queueing_method
    line, tally = Line(method), Tally()
    seats = Seats(plan.capacity, method == "passthrough", per_minute, sellable, stays, tally)
    sold_out_step: int | None = None
    now = 0
    while True:
        row = now // row_steps
        seats.free(now)
        for cohort in giving_up.pop(now, ()):
            line.give_up(cohort)
        seats.minute(now * dt // 60)
        came = per_step.get(now, 0.0)
        tally.arrived[row] = tally.arrived.get(row, 0.0) + came

        if came > 0 and method in ("passthrough", "reject"):
            let_in = min(came, seats.room())
            tally.refused += came - let_in
            tally.admit(Cohort(now, let_in, 0.0, row), now, let_in)
            seats.seat(now, row, let_in)
        elif came > 0:
            cohort = Cohort(now, came * (1 - leave), came * leave, row)
            line.join(cohort)
            if cohort.leavers > 0:
                giving_up.setdefault(now + patience, []).append(cohort)
        line.step()
        # Stays shorter than a step free their seats within it: let the line in again.
        for _ in range(ROUNDS if method in ("fifo", "random") else 0):
            let_in = min(seats.room(), line.stayers)
            if let_in <= SMALL:
                break
            line.let_in(now, let_in, tally)
            seats.seat(now, row, let_in)
            if seats.free(now) <= AGAIN * plan.capacity:
                break
        seats.free(now)
        waiting = max(line.stayers + line.leavers, 0.0)
        tally.line[row] = waiting
        if tally.served >= sellable - SMALL:
            sold_out_step = now
        done = now >= last_arrival and line.stayers <= 1e-6
        if done or sold_out_step is not None or now >= end:
            break
        now += 1
    if method == "random":
        line.random_waits(tally)
    unserved = max(line.stayers, 0.0) + (line.leavers if sold_out_step is not None else 0.0)
    unserved += sum(n for s, n in per_step.items() if s > now)
    rates = plan_rates(plan)
    lines = [tally.line[r] for r in sorted(tally.line)]
    checkins = checkins_per_second(rates, plan, lines)
    joins = max(tally.arrived.values(), default=0.0) / (row_steps * dt)
    waits = _waits(tally.waits, dt, tally.served)
    return Plan(
        waits=waits,
        by_minute=_rows(tally, row_steps, dt),
        sold_out_minute=None if sold_out_step is None else sold_out_step * dt // 60,
        served_share=min(tally.served / total, 1.0) if total > 0 else 1.0,
        peak_checkins_per_second=checkins,
        hosts=hosts_for(checkins, joins, max(lines, default=0.0), plan.capacity),
        arrivals=total,
        step_seconds=dt,
        refused=tally.refused,
        unserved=unserved,
        finished=now < end or sold_out_step is not None,
    )


def _quantile(hist: dict[int, float], q: float, total: float) -> int:
    want, seen = q * total, 0.0
    for wait in sorted(hist):
        seen += hist[wait]
        if seen >= want - SMALL:
            return wait
    return max(hist, default=0)


def _waits(hist: dict[int, float], dt: int, total: float) -> Waits:
    """Percentiles of the waits; ``max`` the wait of the last whole person (the last
    half a person of a fractional tail is nobody)."""
    if total <= SMALL or not hist:
        return Waits(0.0, 0.0, 0.0, 0.0)
    last = _quantile(hist, 1.0 - 0.5 / total, total) if total > 1 else max(hist)
    p50, p90, p99 = (_quantile(hist, q, total) for q in (0.5, 0.9, 0.99))
    return Waits(p50 * dt, p90 * dt, p99 * dt, last * dt)


def _rows(tally: Tally, row_steps: int, dt: int) -> list[Row]:
    """One row per minute (per several, in a long plan): its first minute, arrivals,
    admissions, people waiting at its end, and the median wait of its arrivals."""
    rows = []
    for r in range(max(tally.line, default=0) + 1):
        waits = tally.row_waits.get(r)
        p50 = float(_quantile(waits, 0.5, sum(waits.values())) * dt) if waits else None
        rows.append((r * row_steps * dt // 60, tally.arrived.get(r, 0.0),
                     tally.admitted.get(r, 0.0), tally.line.get(r, 0.0), p50))  # fmt: skip
    return rows


def plan_rates(plan: PlanInput) -> Rates:
    """The pace the estimator would measure in the planned room (for its check-in
    windows): seats releasing at capacity / stay, at most admit_per_minute."""
    service = plan.capacity / max(plan.stay_seconds, 1.0)
    if plan.admit_per_minute:
        service = min(service, plan.admit_per_minute / 60)
    return Rates(service, 1.0, plan.stay_cs2, 1.0 - plan.leave_share, plan.capacity, 0.01)


def checkins_per_second(rates: Rates, plan: PlanInput, lines: Sequence[float]) -> float:
    """The most check-ins a second the line makes over the plan: each waiting person
    checks in every ``estimate.poll_after`` seconds for their place, within the window
    ``windows.window`` grants there (docs/scaling.md, "Check-in windows"). Worked out
    at every place near the head, then at places 2% apart (the interval changes
    smoothly), and at the far interval past the last place whose window is not yet the
    longest."""
    longest = max(lines, default=0.0)
    if longest <= 0:
        return 0.0
    hint = windows.hint(rates)

    def rate(k: int) -> float:
        window = windows.window(hint, k, plan.dropout_seconds, plan.max_checkin_seconds)
        every = estimate.poll_after(
            plan.dropout_seconds, k + 1, estimate.wait_for(rates, k), window
        )
        return 1.0 / max(every, estimate.POLL_FLOOR)

    places, sums = [0], [0.0]  # sums[i]: check-ins a second of the first places[i] people
    k, here = 0, rate(0)
    while k < longest:
        nxt = k + 1 if k < 100 else max(k + 1, int(k * 1.02))
        there = rate(nxt)
        sums.append(sums[-1] + (nxt - k) * (here + there) / 2)
        places.append(nxt)
        k, here = nxt, there

    def at(people: float) -> float:
        i = bisect_right(places, people) - 1
        return sums[i] + (people - places[i]) * rate(places[i])

    return max(at(n) for n in set(lines))


def hosts_for(checkins: float, joins: float, waiting: float, capacity: int) -> dict[str, float]:
    """App hosts (two cores at 70%) and Redis cores for the peak, from the costs measured
    per check-in (docs/operations.md, "How many hosts"); seated visitors' sockets need
    a host per SOCKETS_PER_HOST on top of that."""
    calls = checkins + JOIN_COST * joins
    app_cores = calls * APP_SECONDS_PER_CHECKIN
    by_line = app_cores / (HOST_CORES * BUSY_SHARE)
    by_sockets = capacity / SOCKETS_PER_HOST
    return {
        "app_hosts": max(1, math.ceil(by_line + by_sockets - 1e-9)),
        "app_cores": round(app_cores, 2),
        "redis_cores": round(calls * REDIS_SECONDS_PER_CHECKIN, 3),
        "peak_waiting": round(waiting),
        "peak_joins_per_second": round(joins, 1),
    }
