"""A scheduled drop's start with a large pre-queue (issue 32): how long any one script
holds Redis, what check-ins of another room on the same Redis wait meanwhile, and how
long the whole pre-queue takes to be placed.

Starts a throwaway redis-server and pre-queues N people in one room (a few hundred
through the join script, the rest written as the join writes them: 100,000 joins
through the script would take minutes), with a seed committed and each one ranked as
at its join. Another room has a line of its own, checked in by two processes one call
after another (as app processes send them) all through the start. The start is then
held as the sweep holds it (``Drops.tick``: a slice per call, carried on until done).
Read from Redis' slow log (threshold 0): the longest script call of the run, any
room's; client-side: the other room's check-in latency (p50, p99) while the start
runs, and the start's wall time until the draw's state is ``drawn``; then a sell-out
ending everyone waiting, a batch a call, as the sweep does: its longest call.

``--at-once`` holds the same start in one call (every slice as one: the rule before
issue 32) for comparison.

    .venv/bin/python bench/drop_start.py [--people 100000] [--at-once]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from servers import start_redis  # noqa: E402

from webapp.domain import drops as drops_module  # noqa: E402
from webapp.domain.draw import draw_rank, verify_draw  # noqa: E402
from webapp.domain.drops import Drops  # noqa: E402
from webapp.domain.rooms import WaitingRooms  # noqa: E402
from webapp.domain.tickets import public_id  # noqa: E402
from webapp.redis.keys import Keys  # noqa: E402
from webapp.redis.replies import text  # noqa: E402
from webapp.redis.scripts import Scripts  # noqa: E402

LONGEST_GOAL_MS = 20.0  # no script holds Redis longer (issue 32)
CHECK_IN_P99_GOAL_MS = 50.0  # another room's check-ins during the start
PLACED_GOAL_S = 5.0  # the whole pre-queue placed
KEYS = Keys("bench")
DROP, OTHER = "drop", "other"
OTHER_LINE = 2000  # waiting in the other room
CHECKERS = 2  # processes checking the other room in


def engine(client: redis.Redis) -> WaitingRooms:
    return WaitingRooms(client, KEYS, Scripts(client))


def prequeue(rooms: WaitingRooms, people: int) -> list[str]:
    """The drop room with ``people`` pre-queued, its start due; their tokens."""
    client = rooms.client
    now = time.time()
    rooms.configure(DROP, {"capacity": 500, "dropout_seconds": 3600,
                           "prequeue_at": int(now) - 1, "starts_at": int(now) + 3600})  # fmt: skip
    Drops(rooms).tick(DROP)  # the seed committed, as Visits.configure does
    joined = min(people, 300)
    tokens = [rooms.join(DROP, identity=f"p{i}").token for i in range(joined)]
    seed = bytes.fromhex(client.hget(KEYS.drop(DROP).drop, "seed").decode())
    room, drop = KEYS.room(DROP), KEYS.drop(DROP)
    with client.pipeline(transaction=False) as pipe:
        for i in range(people - joined):
            token = secrets.token_hex(16)
            tokens.append(token)
            ticket = {"st": "waiting", "n": "", "j": now, "sc": "", "pq": 1, "di": public_id(token)}
            pipe.hset(room.tickets, token, json.dumps(ticket))
            pipe.zadd(room.checkin, {token: now + 3600})
            pipe.zadd(drop.prequeue, {token: draw_rank(seed, public_id(token))})
            if i % 2000 == 1999:
                pipe.execute()
        pipe.execute()
    return tokens


def check_ins(port: int, tokens: list[str], go: Any, during: Any, stop: Any, out: Any) -> None:
    """Checks the other room's tickets in, one call after another, until told to stop;
    sends the latencies (ms) of those made while the start ran."""
    rooms = engine(redis.Redis(port=port))
    go.wait()
    times: list[float] = []
    while not stop.is_set():
        for token in tokens:
            began = time.perf_counter()
            rooms.check_in(OTHER, token)
            if during.is_set():
                times.append((time.perf_counter() - began) * 1000)
            if stop.is_set():
                break
    out.send(times)


def is_drop_call(entry: dict[str, Any]) -> bool:
    """A script call with the drop room's keys (the start's, the sweep's turn)."""
    command = entry["command"]
    return command.startswith(b"EVALSHA") and KEYS.drop(DROP).prequeue.encode() in command


def verdict(value: float, goal: float) -> str:
    return "pass" if value <= goal else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=100_000, help="pre-queued")
    parser.add_argument("--at-once", action="store_true", help="the start in one call")
    args = parser.parse_args()
    if args.at_once:
        drops_module.PLACE_SLICE = args.people + 1
        drops_module.PLACE_BUDGET_US = 10**12
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as work:
        port, _ = start_redis(stack, Path(work))
        client = redis.Redis(port=port)
        rooms = engine(client)
        began = time.perf_counter()
        tokens = prequeue(rooms, args.people)
        rooms.configure(OTHER, {"capacity": 1, "dropout_seconds": 3600})
        others = [rooms.join(OTHER, identity=f"o{i}").token for i in range(OTHER_LINE)]
        print(f"{args.people:,} pre-queued in {time.perf_counter() - began:.0f} s; "
              f"{OTHER_LINE:,} waiting in another room, checked in by {CHECKERS} "
              f"processes one call at a time; the start "
              f"{'in one call (as before issue 32)' if args.at_once else 'in slices'}")  # fmt: skip
        go, during, stop = (multiprocessing.Event() for _ in range(3))
        pipes, workers = [], []
        for n in range(CHECKERS):
            mine, theirs = multiprocessing.Pipe(duplex=False)
            share = others[n::CHECKERS]
            worker = multiprocessing.Process(
                target=check_ins, args=(port, share, go, during, stop, theirs)
            )
            worker.start()
            pipes.append(mine)
            workers.append(worker)
        go.set()
        time.sleep(1.0)  # the check-ins under way
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 1_000_000)
        client.slowlog_reset()
        client.hset(KEYS.room(DROP).settings, "starts_at", int(time.time()))
        during.set()
        started = time.perf_counter()
        drops = Drops(rooms)
        while drops.tick(DROP, place_for=60.0).placing:
            pass
        placed_in = time.perf_counter() - started
        stop.set()
        latencies = [t for p in pipes for t in p.recv()]
        for worker in workers:
            worker.join()
        log = client.slowlog_get(1_000_000)
        scripts = [e["duration"] / 1000 for e in log if e["command"].startswith(b"EVALSHA")]
        starts = [e["duration"] / 1000 for e in log if is_drop_call(e)]
        load = os.getloadavg()[0]
        # A sell-out then ends everyone waiting (a batch a call, the sweep's turn).
        client.slowlog_reset()
        client.hset(KEYS.room(DROP).settings, "stock", 0)
        ended_from = time.perf_counter()
        while drops.tick(DROP).ended:
            pass
        ended_in = time.perf_counter() - ended_from
        sold_out = [e["duration"] / 1000 for e in client.slowlog_get(1_000_000) if is_drop_call(e)]
        client.config_set("slowlog-log-slower-than", 10_000)
        drop_keys = KEYS.drop(DROP)
        state = client.hget(drop_keys.drop, "state")
        seed = text(client.hget(drop_keys.drop, "seed"))
        ids = [text(i) for i in client.lrange(drop_keys.drawn, 0, -1)]
        in_order = ids == verify_draw(seed, map(public_id, tokens))
        quantiles = statistics.quantiles(latencies, n=100)
        longest = max(scripts)
        print(f"draw {text(state)}: {len(ids):,} placed, in the draw's order: "
              f"{'yes' if in_order else 'NO'}; {len(scripts):,} script calls logged")  # fmt: skip
        print(f"longest script call: {longest:.1f} ms (goal <= {LONGEST_GOAL_MS:g} ms) "
              f"{verdict(longest, LONGEST_GOAL_MS)}")  # fmt: skip
        print(f"check-ins of another room during the start: {len(latencies):,}, "
              f"p50 {quantiles[49]:.1f} ms, p99 {quantiles[98]:.1f} ms "
              f"(goal p99 <= {CHECK_IN_P99_GOAL_MS:g} ms) "
              f"{verdict(quantiles[98], CHECK_IN_P99_GOAL_MS)}")  # fmt: skip
        print(f"whole pre-queue placed in {placed_in:.2f} s (goal <= {PLACED_GOAL_S:g} s) "
              f"{verdict(placed_in, PLACED_GOAL_S)}")  # fmt: skip
        print(f"  the start's {len(starts):,} calls: median {statistics.median(starts):.1f} ms, "
              f"longest {max(starts):.1f} ms; load average {load:.1f} on {os.cpu_count()} "
              f"cores (past the core count, a call's time includes waiting for one)")  # fmt: skip
        print(f"sold out then: {len(sold_out):,} calls ended everyone waiting in "
              f"{ended_in:.2f} s, longest {max(sold_out, default=0):.1f} ms "
              f"(goal <= {LONGEST_GOAL_MS:g} ms) "
              f"{verdict(max(sold_out, default=0), LONGEST_GOAL_MS)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
