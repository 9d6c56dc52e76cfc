"""Is the planner right? Plans three drops, then replays each against the app and prints
plan against measurement (issue 34, docs/planner.md).

The app is the real one (``create_app``, every view and script) on a private
redis-server on a free loopback port, driven through its HTTP API by Flask's test
client on a simulated clock, so a drop of 20 minutes replays in well under a minute.
The plan comes from ``POST /api/admin/rooms/<room>/plan``; the replay then follows it:
arrivals at the seconds planned (spread evenly within each second), each visitor
checking in at every ``poll_after`` the API answers, holding the seat for a stay drawn
from the planned distribution from the moment it was offered, and the planned share
leaving the line (they stop checking in after the planned patience); the background
sweep runs every simulated second, as ``SWEEP_INTERVAL`` 1 would. A wait is the time
from joining to the offer of a seat, as the engine records it (and as the plan counts
it). The bar: the measured p50 and p90 within 15% of the plan.

Before the replays it times the planner on a million arrivals (half in the first minute,
the rest over nine; 3,000 seats of 60 s stays, 10% leaving; the goal: at most 5 s).

    .venv/bin/python bench/plan_replay.py [--seed N] [--scale 1.0] [--only TEXT]
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from servers import OPEN_JOIN_LIMITS, run_bounded, start_redis

from webapp import create_app

ADMIN = {"Authorization": "Bearer bench-admin-token"}
BAR = 0.15  # the measured p50 and p90 within this share of the plan's
BUDGET = 1200  # seconds: the whole bench at most (a few minutes on an idle machine)
SWEEP_EVERY = 1.0  # simulated seconds between background sweeps (SWEEP_INTERVAL)
# name, the room's settings, the plan's inputs (the arrivals: total, first-minute share,
# seconds over which they come)
SCENARIOS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("500 at once, 20 seats, 30 s stays (exponential)",
     {"capacity": 20},
     {"arrivals": [[0, 500]], "stay_seconds": 30, "stay_cs2": 1}),
    ("500 over 5 min (half in the first), 20 seats, 60 s lognormal stays, 10% leave",
     {"capacity": 20},
     {"shape": {"total": 500, "first_minute_share": 0.5, "duration_seconds": 300},
      "stay_seconds": 60, "stay_cs2": 1.5, "leave_share": 0.1, "patience_seconds": 120}),
    ("500 over 3 min, 50 seats, 40 admitted a minute, stock 400",
     {"capacity": 50, "admit_per_minute": 40},
     {"shape": {"total": 500, "first_minute_share": 0.4, "duration_seconds": 180},
      "stay_seconds": 45, "stay_cs2": 0.5, "stock": 400}),
]  # fmt: skip


class SimClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def draw_stay(rng: random.Random, mean: float, cs2: float) -> float:
    """A stay as the plan assumes them: all alike, exponential, or lognormal."""
    if cs2 <= 1e-6:
        return mean
    if abs(cs2 - 1) < 1e-6:
        return rng.expovariate(1 / mean)
    sigma = math.sqrt(math.log(1 + cs2))
    return rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma)


def joins_of(plan_body: dict[str, Any], rng: random.Random) -> list[float]:
    """The seconds at which people join, as planned: each second's count spread evenly
    over it (a fractional count rounds by chance, so the total is kept on average)."""
    from webapp.domain.planner import shaped_arrivals

    if "arrivals" in plan_body:
        pairs = [(s, float(n)) for s, n in plan_body["arrivals"]]
    else:
        shape = plan_body["shape"]
        pairs = shaped_arrivals(shape["total"], shape["first_minute_share"],
                                shape["duration_seconds"])  # fmt: skip
    out, carry = [], 0.0
    for second, count in pairs:
        carry += count
        whole = int(carry + 1e-9)
        carry -= whole
        out += [second + (i + 0.5) / whole for i in range(whole)] if whole > 1 else [second] * whole
    return out


def replay(app: Any, clock: SimClock, room: str, body: dict[str, Any], seed: int) -> dict[str, Any]:
    """Runs the drop through the API; returns the waits and counts measured."""
    rng = random.Random(seed)
    client = app.test_client()
    services = app.extensions["services"]
    tickets = services.rooms.room_keys(room).tickets
    redis_client = services.rooms.client
    start, order = clock.now, 0
    events: list[tuple[float, int, str, Any]] = []

    def at(when: float, kind: str, data: Any = None) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (when, order, kind, data))

    for t in joins_of(body, rng):
        at(start + t, "join")
    at(start, "sweep")
    stay, cs2 = body["stay_seconds"], body.get("stay_cs2", 1.0)
    leave, patience = body.get("leave_share", 0.0), body.get("patience_seconds", 300.0)
    waits: list[float] = []
    calls = refused = gave_up = 0
    while any(kind != "sweep" for _, _, kind, _ in events):
        when, _, kind, data = heapq.heappop(events)
        clock.now = max(clock.now, when)
        if kind == "sweep":
            services.visits.sweep(room)
            at(clock.now + SWEEP_EVERY, "sweep")
            continue
        calls += 1
        if kind == "leave":
            client.post(f"/api/rooms/{room}/leave/{data}")
            continue
        if kind == "join":
            reply = client.post(f"/api/rooms/{room}/join")
            if reply.status_code != 200:
                refused += 1  # sold out (410), or refused otherwise
                continue
            joined, quits = clock.now, math.inf
            if rng.random() < leave:
                quits = clock.now + patience
            token = reply.get_json()["token"]
        else:
            token, joined, quits = data
            if clock.now >= quits:
                gave_up += 1
                continue  # stops checking in: the engine drops the place
            reply = client.get(f"/api/rooms/{room}/position/{token}")
            if reply.status_code != 200:
                continue  # the place ended (dropped, sold out)
        out = reply.get_json()
        if out["status"] == "admitted":
            if body.get("stock") is not None:  # the site reports each sale, as it would
                sold = {"sold": body.get("units_per_admission", 1), "request_id": token}
                client.post(f"/api/admin/rooms/{room}/stock", json=sold, headers=ADMIN)
            offered = float(json.loads(redis_client.hget(tickets, token))["a"])
            waits.append(offered - joined)
            at(max(clock.now, offered + draw_stay(rng, stay, cs2)), "leave", token)
        else:
            at(clock.now + float(out["poll_after"]), "poll", (token, joined, quits))
    return {"waits": sorted(waits), "calls": calls, "refused": refused, "gave_up": gave_up,
            "span": clock.now - start}  # fmt: skip


def scaled(body: dict[str, Any], scale: float) -> dict[str, Any]:
    """The plan's inputs with ``scale`` times the arrivals (and stock)."""
    if scale == 1.0:
        return body
    out = dict(body)
    if "arrivals" in out:
        out["arrivals"] = [[s, n * scale] for s, n in out["arrivals"]]
    if "shape" in out:
        out["shape"] = {**out["shape"], "total": round(out["shape"]["total"] * scale)}
    if out.get("stock"):
        out["stock"] = round(out["stock"] * scale)
    return out


def nearest_rank(waits: list[float], q: float) -> float:
    """The q-quantile as the plan counts it: the smallest wait with q of them at or under."""
    return waits[max(math.ceil(q * len(waits)) - 1, 0)] if waits else 0.0


def million() -> None:
    """Times the planner on a million arrivals, in this process (no server involved)."""
    from webapp.domain.planner import PlanInput, shaped_arrivals, simulate

    arrivals = tuple(shaped_arrivals(1_000_000, 0.5, 600))
    for method in ("fifo", "random"):
        began = time.perf_counter()
        made = simulate(PlanInput(arrivals=arrivals, capacity=3000, stay_seconds=60,
                                  leave_share=0.1, queueing_method=method))  # fmt: skip
        took = time.perf_counter() - began
        print(f"a million arrivals, {method}: planned in {took:.2f} s (goal 5 s: "
              f"{'met' if took <= 5 else 'MISSED'}); p50 {made.waits.p50:.0f} s, "
              f"p90 {made.waits.p90:.0f} s, peak {made.peak_checkins_per_second:,.0f} "
              f"check-ins a second, {made.hosts['app_hosts']} hosts")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", help="run only the scenarios whose name contains this")
    parser.add_argument("--scale", type=float, default=1.0, help="arrivals times this")
    args = parser.parse_args()
    failures: list[str] = []

    def work(stack: contextlib.ExitStack) -> None:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wr-plan-")))
        port, _ = start_redis(stack, directory)
        clock = SimClock()
        app = create_app({
            "REDIS_URL": f"redis://127.0.0.1:{port}/0", "ADMIN_TOKEN": "bench-admin-token",
            "SECRET_KEY": "bench", "SWEEP_INTERVAL": 0, "CLOCK": clock,
            "TESTING": True, "DATA_DIR": str(directory),
            **{k.removeprefix("WEBAPP_"): v for k, v in OPEN_JOIN_LIMITS.items()},
        })  # fmt: skip
        stack.callback(app.extensions["services"].stop)
        client = app.test_client()
        million()
        print(f"{'scenario':80} {'':9} {'p50':>7} {'p90':>7} {'max':>7} {'let in':>7}")
        for i, (name, settings, body) in enumerate(SCENARIOS):
            if args.only and args.only not in name:
                continue
            room = f"plan{i}"
            # The admin sets the typical stay the plan assumes: the first estimates (and
            # so the first check-in windows) come from it until stays are measured
            typical = round(body["stay_seconds"])
            clock.now = math.ceil(clock.now / 60) * 60  # the plan's minutes are clock minutes
            if body.get("stock") is not None:
                settings = {**settings, "stock": round(body["stock"] * args.scale)}
            made = client.put(f"/api/admin/rooms/{room}", headers=ADMIN,
                              json={"dropout_seconds": 30, "typical_stay_seconds": typical,
                                    **settings})  # fmt: skip
            assert made.status_code in (200, 201), made.get_json()
            began = time.perf_counter()
            plan = client.post(f"/api/admin/rooms/{room}/plan", json=scaled(body, args.scale),
                               headers=ADMIN)  # fmt: skip
            assert plan.status_code == 200, plan.get_json()
            planned = plan.get_json()
            took_plan = time.perf_counter() - began
            began = time.perf_counter()
            run = replay(app, clock, room, scaled(body, args.scale), args.seed * 100 + i)
            waits, total = run["waits"], planned["arrivals"]
            measured = {q: nearest_rank(waits, p) for q, p in (("p50", 0.5), ("p90", 0.9))}
            pw = planned["waits"]
            print(f"{name:80} {'plan':9} {pw['p50']:7.0f} {pw['p90']:7.0f} {pw['max']:7.0f} "
                  f"{planned['served_share']:7.1%}")  # fmt: skip
            print(f"{'':80} {'measured':9} {measured['p50']:7.0f} {measured['p90']:7.0f} "
                  f"{max(waits, default=0):7.0f} {len(waits) / total:7.1%}")  # fmt: skip
            off = {q: measured[q] / pw[q] - 1 if pw[q] else 0.0 for q in measured}
            print(f"{'':80} {'off by':9} {off['p50']:+7.1%} {off['p90']:+7.1%}   "
                  f"(plan in {took_plan:.2f} s; replay: {run['calls']} calls, "
                  f"{run['span']:.0f} s simulated in {time.perf_counter() - began:.0f} s, "
                  f"{run['gave_up']} gave up, {run['refused']} refused)")  # fmt: skip
            failures.extend(f"{name}: {q} off by {v:+.0%}" for q, v in off.items() if abs(v) > BAR)
        print("bar met" if not failures else "BAR MISSED: " + "; ".join(failures))

    code = run_bounded(BUDGET, work)
    return code or (1 if failures else 0)


if __name__ == "__main__":
    sys.exit(main())
