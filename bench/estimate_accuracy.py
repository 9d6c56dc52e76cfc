"""How right are the wait estimates? Runs the real engine against a real Redis.

Starts a private redis-server on a free loopback port, drives ``WaitingRooms`` and
``Lobby`` with a simulated clock through several scenarios, and prints per scenario
and estimator:

  MdAPE   median absolute percentage error of the wait predicted at join
  bias    median of (predicted / actual - 1): + means waits were over-estimated
  in±1sd  share of actual waits inside predicted mean ± one standard deviation
  grew    share of visitors whose shown figure rose more than 20% (and by 5 s or
          more) above the lowest figure shown to them earlier

Only visitors who joined the line after the warm-up and were admitted are scored.
Estimators: "ours" (webapp.domain.estimate, what the lobby shows, smoothed) and
"naive" (people ahead x mean seat time / capacity, the mean taken from the same
measured holding times and the capacity set at the time, sd from Poisson departures;
shown unsmoothed). Each joiner's prediction is kept in the room's record as
``Visits.join`` keeps it, so "ours" is calibrated by the record as in the app.

Four scenarios keep the pace of releases (steady exponential and lognormal seats,
bursts, a rising share of dropouts); seven change it: stays that double for 30 minutes
(every stay in progress runs at half speed meanwhile), the capacity halved by an admin
for an hour, a periodic slowdown (half speed 5 minutes in every 20), a step down
(stays double for good), a step up (stays halve for good), admins pausing the room for
3 minutes every half hour, and a pace that changes every 5 to 20 minutes. Those with one change also
score the visitors who joined near it ("who joined near it": from ten minutes before
the change to twenty after its end), and each run says the share of scored visitors
ever told that the line had slowed down ("told slower").

Scenarios run two at a time (``--jobs``), each in its own process, on one Redis.
``--dump PREFIX`` writes, per scenario, every scored visitor's statistics at join, the
people ahead, the seats taken and the capacity, how many of the people ahead were let
in first and the wait they had, so other estimators can be scored on the very same
visitors offline.

    .venv/bin/python bench/estimate_accuracy.py [--quick] [--seed N] [--jobs N]
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import heapq
import json
import math
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from servers import start_redis

from webapp.domain import pace
from webapp.domain.lobby import Lobby
from webapp.domain.reports import Reports
from webapp.domain.rooms import JoinRefused, TicketGone, WaitingRooms
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

ROOM = "bench"
SWEEP_EVERY = 2.0  # simulated seconds between background sweeps


class SimClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


Steps = list[tuple[float, float]]  # (from time t since the start, value), in time order


@dataclass
class Scenario:
    name: str
    steady: bool
    duration: float  # simulated seconds of arrivals
    warmup: float  # visitors joining before this are not scored
    arrival_rate: Callable[[float], float]  # per second, at time t since the start
    seat_time: Callable[[random.Random], float]
    dropout_share: Callable[[float], float]  # share of joiners who would give up
    patience: float = 300.0  # mean seconds (exponential) before such a one stops checking in
    capacity: int = 20
    dropout_seconds: int = 60
    max_wait_seconds: int | None = 600
    # How fast seated people use up their seat time, from time t on (1: as drawn; 0.5:
    # every stay in progress runs twice as long meanwhile). Drawn from the run's seed.
    pace: Callable[[random.Random], Steps] = lambda rng: []
    capacity_at: Steps = field(default_factory=list)  # an admin sets the capacity then
    paused_at: list[tuple[float, float]] = field(default_factory=list)  # (from, until)
    focus: tuple[float, float] | None = None  # also score those who joined in here


@dataclass
class Visitor:
    token: str
    joined: float
    quits_at: float
    stays_for: float  # seconds in the seat, once claimed
    predicted: dict[str, tuple[float, float]]  # estimator -> (mean, sd) at join
    shown: dict[str, list[float]] = field(default_factory=dict)
    carried: str | None = None  # the smoothed figure the client hands back
    slower: bool = False  # was told the line had slowed down
    waited: float | None = None
    offer: tuple[float, int] | None = None  # (time of the offer, line admissions at join)
    # (now, ahead, stats, seats taken, capacity) at join
    seen: tuple[float, int, dict[str, float], int, int] | None = None


def exponential(mean: float) -> Callable[[random.Random], float]:
    return lambda rng: rng.expovariate(1.0 / mean)


def lognormal(mean: float, sigma: float) -> Callable[[random.Random], float]:
    mu = math.log(mean) - sigma * sigma / 2
    return lambda rng: rng.lognormvariate(mu, sigma)


def scenarios(quick: bool) -> list[Scenario]:
    """Capacity 20, mean seat time 60 s: a full room frees a seat every 3 s. One joiner
    in five would give up after an exponential patience of mean 300 s."""
    warm = 900.0  # visitors joining before this are not scored
    # Errors of visitors who join within one wait of each other are nearly the same
    # error (they wait for the same releases), so a run holds about one independent
    # sample per wait (~10 min) or per burst: the full run is long enough for the
    # verdict not to depend on the seed.
    span = warm + (1800.0 if quick else 10800.0)  # the statistics' TAU is 600 s
    cycle = 1800.0  # the burst scenario: one burst per cycle, then the line drains
    bursts = 2 if quick else 36
    middle = warm + (span - warm) / 2  # the changes of pace: in the middle of the run
    slow, halved = (900.0, 1200.0) if quick else (1800.0, 3600.0)

    def changing(name: str, **rest: Any) -> Scenario:
        """The steady exponential room (one joiner every 2 s, one in five would give
        up) under a change of pace, capacity or status."""
        return Scenario(
            name, False, span, warm, lambda t: 0.5, exponential(60), lambda t: 0.2, **rest
        )

    return [
        Scenario(
            "steady, exponential seats",
            True,
            span,
            warm,
            lambda t: 0.5,
            exponential(60),
            lambda t: 0.2,
        ),
        Scenario(
            "steady, lognormal seats (cs2=3.2)",
            True,
            span,
            warm,
            lambda t: 0.5,
            lognormal(60, 1.2),
            lambda t: 0.2,
        ),
        Scenario(
            "burst: 10x arrivals for 120 s",
            False,
            cycle * (bursts + 1),
            warm,
            lambda t: 1.5 if t >= cycle and t % cycle < 120 else 0.15,
            exponential(60),
            lambda t: 0.2,
            max_wait_seconds=None,
        ),
        Scenario(
            "rising dropouts 5% -> 60%",
            False,
            span,
            warm,
            lambda t: 0.5,
            exponential(60),
            lambda t: 0.05 + 0.55 * min(t / span, 1.0),
            patience=120.0,
        ),
        changing(
            "stays double for 30 min",
            pace=lambda rng: [(middle - slow / 2, 0.5), (middle + slow / 2, 1.0)],
            focus=(middle - slow / 2 - 600, middle + slow / 2 + 1200),
        ),
        changing(
            "capacity halved for an hour",
            capacity_at=[(middle - halved / 2, 10), (middle + halved / 2, 20)],
            focus=(middle - halved / 2 - 600, middle + halved / 2 + 1200),
        ),
        changing(
            "periodic slowdown: half pace 5 min in 20",
            pace=lambda rng: periodic(warm / 2, span, every=1200.0, slow=300.0),
        ),
        changing(
            "step down: stays double for good",
            pace=lambda rng: [(middle, 0.5)],
            focus=(middle - 600, middle + 1200),
        ),
        changing(
            "step up: stays halve for good",
            pace=lambda rng: [(middle, 2.0)],
            focus=(middle - 600, middle + 1200),
        ),
        changing(
            "admins pause 3 min every 30 min",
            paused_at=[(t, t + 180.0) for t in range(int(warm), int(span), 1800)],
        ),
        changing("pace changes every 5-20 min", pace=lambda rng: programme(rng, warm / 2, span)),
    ]


def programme(rng: random.Random, start: float, end: float) -> Steps:
    """From ``start`` on, the pace of leaving changes every 5 to 20 minutes, to anything
    from half to twice the drawn pace (uniform in its logarithm): talks short and long."""
    steps, t = [], start
    while t < end:
        steps.append((t, math.exp(rng.uniform(-math.log(2), math.log(2)))))
        t += rng.uniform(300, 1200)
    return steps


def periodic(start: float, end: float, every: float, slow: float) -> Steps:
    """From ``start`` on, stays run at half speed for ``slow`` seconds of every ``every``
    (a talk that draws people in for a while, every so often)."""
    steps, t = [], start
    while t < end:
        steps += [(t, 0.5), (t + slow, 1.0)]
        t += every
    return steps


def finish(pace: Steps, start: float, work: float) -> float:
    """When a stay of ``work`` seconds at pace 1, begun at ``start``, ends under ``pace``."""
    t, rate = start, 1.0
    i = bisect.bisect_right(pace, (start, math.inf))
    if i > 0:
        rate = pace[i - 1][1]
    for when, then in pace[i:]:
        if t + work / rate <= when:
            break
        work -= (when - t) * rate
        t, rate = when, then
    return t + work / rate


def naive(stats: dict[str, float], now: float, capacity: int, ahead: int) -> tuple[float, float]:
    hold = pace.moments(stats, "hold", now)
    mean = ahead * hold.mean / capacity
    return mean, mean / math.sqrt(ahead) if ahead > 0 else 0.0


def simulate(client: redis.Redis, scenario: Scenario, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    clock = SimClock()
    start = clock.now
    rooms = WaitingRooms(client, Keys(f"bench{seed}"), Scripts(client), clock=clock)
    lobby = Lobby(rooms, Reports(rooms, refresh=1.0, monotonic=clock))
    settings = {
        "capacity": scenario.capacity,
        "dropout_seconds": scenario.dropout_seconds,
        "session_seconds": 86400,
        "max_wait_seconds": scenario.max_wait_seconds,
    }
    rooms.configure(ROOM, settings)
    tickets_key = rooms.room_keys(ROOM).tickets
    events: list[tuple[float, int, str, Visitor | None]] = []
    order = 0

    def at(when: float, kind: str, visitor: Visitor | None = None) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (when, order, kind, visitor))

    pace = scenario.pace(random.Random(seed + 7919))  # not the visitors' draws
    capacity = scenario.capacity  # as the admin last set it

    def seated(visitor: Visitor) -> None:
        at(start + finish(pace, clock.now - start, visitor.stays_for), "leave", visitor)

    at(start, "arrive")
    at(start, "sweep")
    for when, _ in scenario.capacity_at:
        at(start + when, "capacity")
    for begin, until in scenario.paused_at:
        at(start + begin, "pause")
        at(start + until, "open")
    changes = iter(scenario.capacity_at)
    end = start + scenario.duration
    scored: list[Visitor] = []
    refused = lost = calls = 0
    # The room's count of line admissions around each event that changed it, to score
    # the share of people ahead who were let in (FIFO: those let in while one waits).
    stats_key = rooms.room_keys(ROOM).stats
    admissions: dict[float, tuple[int, int]] = {}  # event time -> count before, after
    count = 0
    while events:
        now_count = int(client.hget(stats_key, "line:admitted") or 0)
        if now_count != count:
            earlier = admissions.get(clock.now, (count, count))[0]
            admissions[clock.now] = (earlier, now_count)
            count = now_count
        clock.now, _, kind, visitor = heapq.heappop(events)
        t = clock.now - start
        if kind == "capacity":
            capacity = int(next(changes)[1])
            rooms.configure(ROOM, {"capacity": capacity})
            continue
        if kind in ("pause", "open"):
            rooms.configure(ROOM, {"status": "paused" if kind == "pause" else "open"})
            continue
        if kind == "sweep":
            rooms.sweep(ROOM)
            if clock.now < end or len(events) > 0:
                at(clock.now + SWEEP_EVERY, "sweep")
            if not any(e[2] != "sweep" for e in events):
                break
            continue
        if kind == "arrive":
            # Every draw about a visitor is made here, whatever happens to them, so the
            # same visitors arrive whatever the estimators do (common random numbers).
            gap = rng.expovariate(scenario.arrival_rate(t))
            gives_up = rng.random() < scenario.dropout_share(t)
            patience = rng.expovariate(1.0 / scenario.patience)
            stays_for = scenario.seat_time(rng)
            if clock.now < end:
                at(clock.now + gap, "arrive")
            calls += 1
            try:
                standing = lobby.join(ROOM)
            except JoinRefused:
                refused += 1
                continue
            ticket = standing.ticket
            quits = clock.now + patience if gives_up else math.inf
            new = Visitor(ticket.token, clock.now, quits, stays_for, {})
            if ticket.seated:
                seated(new)
                continue
            if standing.raw is not None and ticket.position:
                # kept for the room's record, as webapp.domain.visits.Visits.join keeps it
                low, high = standing.raw.range
                model = standing.model or standing.raw
                rooms.predict(
                    ROOM, ticket.token, standing.raw.wait, low, high, (model.wait, model.spread)
                )
            stats = lobby.reports.cache.figures(ROOM).stats
            predicted = new.predicted
            if standing.raw is not None:
                predicted["ours"] = (standing.raw.wait, standing.raw.spread)
                predicted["naive"] = naive(stats, clock.now, capacity, ticket.ahead)
            if t >= scenario.warmup and quits == math.inf and len(predicted) == 2:
                scored.append(new)
                new.seen = (clock.now, ticket.ahead, dict(stats), ticket.active, capacity)
            for name, (mean, _) in predicted.items():
                new.shown[name] = [mean]
            new.carried = standing.shown.dumps() if standing.shown else None
            at(clock.now + standing.poll_after, "poll", new)
        elif kind == "poll" and visitor is not None:
            if clock.now >= visitor.quits_at:
                continue  # gives up: stops checking in
            calls += 1
            try:
                ticket = rooms.check_in(ROOM, visitor.token)  # Visits.check_in, untold
                standing = lobby.standing(ROOM, ticket, shown=visitor.carried)
            except TicketGone:
                lost += 1
                continue
            ticket = standing.ticket
            if ticket.seated:
                record = json.loads(client.hget(tickets_key, visitor.token) or "{}")
                visitor.waited = float(record["a"]) - visitor.joined
                visitor.offer = (float(record["a"]), int(record["c"]))
                seated(visitor)
                continue
            stats = lobby.reports.cache.figures(ROOM).stats
            if standing.shown is not None:
                visitor.shown.setdefault("ours", []).append(standing.shown.wait)
                visitor.carried = standing.shown.dumps()
            visitor.slower = visitor.slower or standing.trend == "slower"
            if "naive" in visitor.shown:
                guess = naive(stats, clock.now, capacity, ticket.ahead)[0]
                visitor.shown["naive"].append(guess)
            at(clock.now + standing.poll_after, "poll", visitor)
        elif kind == "leave" and visitor is not None:
            calls += 1
            rooms.leave(ROOM, visitor.token)
    done = [v for v in scored if v.waited is not None and v.waited > 0]

    times = sorted(admissions)

    def first(v: Visitor) -> float | None:
        """Of the people ahead at join, how many were let in first (the midpoint when
        several were let in at the same instant)."""
        if v.offer is None:
            return None
        # The ticket's time went through Lua's tostring (14 digits): the nearest event.
        i = bisect.bisect_left(times, v.offer[0] - 0.001)
        if i == len(times) or times[i] > v.offer[0] + 0.001:
            return None
        before, after = admissions[times[i]]
        return (before + after - 1) / 2 - v.offer[1]

    results: dict[str, object] = {
        "dump": [
            {
                "t": v.seen[0],
                "ahead": v.seen[1],
                "stats": v.seen[2],
                "active": v.seen[3],
                "capacity": v.seen[4],
                "waited": v.waited,
                "first": first(v),
            }
            for v in done
            if v.seen is not None
        ],
        "scored": len(done),
        "refused": refused,
        "lost": lost,
        "calls": calls,
        "median_wait": statistics.median(v.waited for v in done if v.waited) if done else 0,
        "slower": sum(v.slower for v in done) / max(len(done), 1),
    }
    near = []
    if scenario.focus is not None:
        near = [v for v in done if scenario.focus[0] <= v.joined - start < scenario.focus[1]]
        results["near"] = len(near)
    for name in ("ours", "naive"):
        results[name] = score(done, name)
        if near:
            results[f"{name} near"] = score(near, name)
    return results


def score(visitors: list[Visitor], name: str) -> tuple[float, float, float, float]:
    """MdAPE, bias, share inside the predicted mean ± sd, and share whose figure grew."""
    errors, signed, inside, grew = [], [], 0, 0
    for v in visitors:
        assert v.waited is not None
        mean, sd = v.predicted[name]
        errors.append(abs(mean - v.waited) / v.waited)
        signed.append(mean / v.waited - 1)
        inside += abs(mean - v.waited) <= sd
        grew += rose(v.shown.get(name, []))
    n = max(len(visitors), 1)
    return (
        statistics.median(errors) if errors else math.nan,
        statistics.median(signed) if signed else math.nan,
        inside / n,
        grew / n,
    )


def run(port: int, index: int, quick: bool, seed: int) -> dict[str, Any]:
    """One scenario in its own process (scenarios run two at a time on one Redis)."""
    client = redis.Redis(port=port, decode_responses=True)
    began = time.perf_counter()
    try:
        out = simulate(client, scenarios(quick)[index], seed * 100 + index)
    finally:
        client.close()
    out["took"] = time.perf_counter() - began
    return out


def rose(figures: list[float]) -> bool:
    """True if a figure exceeds 1.2 x the lowest one shown before it, by 5 s or more."""
    lowest = math.inf
    for figure in figures:
        if figure > 1.2 * lowest and figure - lowest >= 5.0:
            return True
        lowest = min(lowest, figure)
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="less simulated time")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", help="run only the scenarios whose name contains this")
    parser.add_argument("--dump", help="write each scored visitor's view at join (JSON)")
    parser.add_argument("--jobs", type=int, default=2, help="scenarios run at once")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop redis-server
    failures = []
    with contextlib.ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wr-bench-")))
        port, _ = start_redis(stack, directory)
        client = stack.enter_context(redis.Redis(port=port, decode_responses=True))
        print(f"redis {client.info('server')['redis_version']}, seed {args.seed}")
        header = (
            f"{'scenario':36} {'estimator':9} {'MdAPE':>7} {'bias':>7} {'in±1sd':>7} {'grew':>6}"
        )
        print(header)
        print("-" * len(header))
        chosen = [
            i
            for i, scenario in enumerate(scenarios(args.quick))
            if not args.only or args.only in scenario.name
        ]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            runs = {i: pool.submit(run, port, i, args.quick, args.seed) for i in chosen}
            outs = {i: job.result() for i, job in runs.items()}
        for i in chosen:
            scenario, out, took = scenarios(args.quick)[i], outs[i], outs[i]["took"]
            if args.dump:
                with open(f"{args.dump}.{i}.json", "w") as f:
                    json.dump({"capacity": scenario.capacity, "visitors": out["dump"]}, f)
            for name in ("ours", "naive"):
                error, bias, inside, grew = out[name]
                label = scenario.name if name == "ours" else ""
                print(f"{label:36} {name:9} {error:7.1%} {bias:+7.1%} {inside:7.1%} {grew:6.1%}")
            for name in ("ours", "naive") if "near" in out else ():
                error, bias, inside, grew = out[f"{name} near"]
                label = f"  {out['near']} who joined near it" if name == "ours" else ""
                print(f"{label:36} {name:9} {error:7.1%} {bias:+7.1%} {inside:7.1%} {grew:6.1%}")
            print(
                f"{'':36} ({out['scored']} scored, median wait {out['median_wait']:.0f} s, "
                f"{out['refused']} refused, {out['lost']} lost, {out['calls']} calls "
                f"in {took:.0f} s; told slower {out['slower']:.0%})"
            )
            ours, plain = out["ours"], out["naive"]
            if not ours[0] < plain[0]:
                failures.append(f"{scenario.name}: ours does not beat naive")
            if not 0.55 <= ours[2] <= 0.85:
                failures.append(f"{scenario.name}: ±1sd band holds {ours[2]:.0%}")
            if scenario.steady and not ours[0] < 0.25:
                failures.append(f"{scenario.name}: median error {ours[0]:.0%}")
    print("bar met" if not failures else "BAR MISSED: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
