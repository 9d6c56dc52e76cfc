"""How many waiting visitors one host holds: a load test that follows the protocol
(issue 26, docs/performance.md).

N simulated visitors wait in one room and check in exactly as the API tells them: each
check-in's next one comes after its ``poll_after``, less a jitter (uniformly 50 to 95%
of it: never late, unless the generator itself falls behind: its lag, from when a
check-in was due to when it was sent, is reported apart, and a visitor it made late is
counted "late", never "unfair"). Seats free at a steady pace (``--capacity`` seats held
``--hold`` seconds each); a visitor let in holds its seat that long, leaves, and joins
again at the back, so N stays the same and the line moves. For each N it reports the
check-ins' latency (p50, p99, from sending to the reply: on this shared machine the
generator's own lag would otherwise count as the server's), visitors dropped although
they checked in on time (must be 0), the age of the position a visitor sees (the time
between its replies), the app's and Redis's CPU per waiting visitor per second, and the
load generator's own CPU (it shares the machine). N grows until p99 reaches 500 ms or
someone is dropped unfairly, or the generator falls more than a second behind (p99: it
no longer simulates N visitors); W is the largest N that passed. ``--bare`` runs the same
on bench/baseline_app.py's bare check-in (one EVALSHA, no rules: each visitor polls
every dropout_seconds / 2, as the rule of old says), the ceiling of the framework
itself. ``--against`` another checkout runs it too, its steps interleaved with this
tree's (each goes first in turn), each on its own Redis and gunicorn.

The N visitors join before the clock starts, through the engine of the tree measured in
batches (``--tree``, default this one: another checkout measures another revision),
as many joins as the API would make, only faster; their first check-ins are spread
over the first half of the window each was granted. Runs are short (a few seconds of
warm-up, ``--measure`` seconds measured per N) and the machine is shared: read the
figures as one run's, and compare the two trees in runs made one after the other.

    .venv/bin/python bench/capacity.py [--steps 2000,5000,...] [--tree PATH] [--bare]
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from api_throughput import ADMIN_TOKEN, BENCH_DIR, KeepAlive, answers, percentile
from servers import (
    HOST,
    OPEN_JOIN_LIMITS,
    ROOT,
    _die_with_parent,
    free_port,
    run_bounded,
    start_redis,
    stop,
    tree_cpu,
    wait_until,
)

ROOM = "capacity"
DROPOUT = 30
P99_LIMIT = 0.5  # seconds: the most a check-in may take at the 99th percentile
LAG_LIMIT = 1.0  # seconds: a generator later than this (p99) did not simulate N visitors
GOAL_W = 100_000  # waiting visitors one host holds (issue 26)
JOIN_BATCH = 500

# Joins N visitors through the engine of the tree in the working directory; prints one
# JSON line per ticket: token, state, window (0 when the tree grants none).
PREFILL = """
import json, sys
import redis
from webapp.domain.rooms import WaitingRooms
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts
client = redis.Redis.from_url(sys.argv[1])
rooms = WaitingRooms(client, Keys("wr"), Scripts(client), sweep_every=1.0)
room, count, batch = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
from webapp.domain.tickets import new_ticket
try:  # a joiner's limits (issue 32), in trees that count them in the join
    from webapp.domain.join_limits import NO_LIMITS
    limits = (NO_LIMITS,)
except ImportError:
    limits = ()
try:  # its fields before the limits: 8, and 9 since the join asks the auto puzzle
    from webapp.domain.tickets import Joiner
    fields = len(Joiner.__args__) - 1
except ImportError:
    fields = 8
done = 0
while done < count:
    size = min(batch, count - done)
    joiners = [(new_ticket()[0], *[""] * (fields - 1), *limits) for _ in range(size)]
    for t in rooms.join_many(room, joiners):
        print(json.dumps([t.token, t.state, getattr(t, "window", 0.0)]))
    done += size
"""


@dataclass
class Seen:
    """What one generator thread saw in the measured window."""

    done: int = 0
    errors: int = 0
    unfair: int = 0  # ended although every check-in was on time
    late: int = 0  # check-ins the generator sent after their poll_after (its own fault)
    joins: int = 0
    leaves: int = 0
    latencies: list[float] = field(default_factory=list)  # from sending to the reply
    lags: list[float] = field(default_factory=list)  # from due to sending: the generator's
    ages: list[float] = field(default_factory=list)
    first_error: str = ""

    def add(self, other: Seen) -> None:
        for name in ("done", "errors", "unfair", "late", "joins", "leaves"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.latencies += other.latencies
        self.lags += other.lags
        self.ages += other.ages
        self.first_error = self.first_error or other.first_error


def send(client: KeepAlive, method: str, path: str) -> tuple[int, bytes]:
    """One request; a keep-alive connection the server closed while idle (gunicorn's
    keepalive timeout: visitors far back poll minutes apart) is opened again once, as a
    browser would."""
    message = client.message(method, path)
    try:
        return client.send(message)
    except (ConnectionError, BrokenPipeError):
        client.close()
        return client.send(message)


def visit(
    port: int, bare: bool, people: list[tuple[str, float]], t0: float, start: float,
    end: float, hold: float, seed: int,
) -> Seen:  # fmt: skip
    """One thread's visitors on one keep-alive connection: each (token, first check-in
    at t0 + offset) checks in when due, as the replies say; measured from ``start``."""
    rng = random.Random(seed)
    client = KeepAlive(port)
    out = Seen()
    # heap of (due, token, promised): promised = the latest on-time moment
    heap = [(t0 + offset, token, t0 + offset + DROPOUT) for token, offset in people]
    heapq.heapify(heap)
    replied: dict[str, float] = {}
    clock = time.monotonic
    while heap:
        due, token, promised = heapq.heappop(heap)
        if due >= end:
            break
        wait = due - clock()
        if wait > 0:
            time.sleep(wait)
        measured = due >= start
        sent = clock()
        if token.startswith("leave:"):
            token = token[6:]
            path = f"/api/rooms/{ROOM}/leave/{token}"
            try:
                send(client, "POST", path)
                status, body = send(client, "POST", f"/api/rooms/{ROOM}/join")
            except OSError as error:
                client.close()
                out.errors += measured
                out.first_error = out.first_error or f"{type(error).__name__}: {error}"
                continue
            if status == 200:
                reply = json.loads(body)
                token = reply["token"]
                poll = float(reply["poll_after"])
                now = clock()
                heapq.heappush(heap, (now + poll * rng.uniform(0.5, 0.95), token, now + poll))
                out.joins += measured
                out.leaves += measured
            continue
        path = f"/line/{token}" if bare else f"/api/rooms/{ROOM}/position/{token}"
        try:
            status, body = send(client, "GET", path)
        except OSError as error:
            client.close()
            out.errors += measured
            out.first_error = out.first_error or f"{type(error).__name__}: {error}"
            heapq.heappush(heap, (clock() + 1.0, token, promised))
            continue
        now = clock()
        on_time = sent <= promised
        if measured:
            out.done += 1
            out.latencies.append(now - sent)
            out.lags.append(sent - due)
            out.late += not on_time
            if token in replied:
                out.ages.append(now - replied[token])
        replied[token] = now
        if status == 410:
            out.unfair += measured and on_time
            continue
        if status != 200:
            out.errors += measured
            out.first_error = out.first_error or f"HTTP {status}: {body[:120]!r}"
            heapq.heappush(heap, (now + 1.0, token, promised))
            continue
        if bare:
            poll = DROPOUT / 2
        else:
            reply = json.loads(body)
            poll = float(reply["poll_after"])
            if reply["status"] == "admitted":
                heapq.heappush(heap, (now + hold, "leave:" + token, now + hold))
                continue
        heapq.heappush(heap, (now + poll * rng.uniform(0.5, 0.95), token, now + poll))
    client.close()
    return out


def generator(
    port: int, bare: bool, people: list[tuple[str, float]], t0: float, start: float,
    end: float, hold: float, threads: int, seed: int, queue: Any,
) -> None:  # fmt: skip
    """One load-generating process: ``threads`` threads, each with its share."""
    results: list[Seen] = [Seen() for _ in range(threads)]

    def run(i: int) -> None:
        try:
            share = people[i::threads]
            results[i] = visit(port, bare, share, t0, start, end, hold, seed * 1000 + i)
        except Exception as error:  # reported with the figures
            results[i].first_error = f"{type(error).__name__}: {error}"
            results[i].errors += 1

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    total = Seen()
    for seen in results:
        total.add(seen)
    queue.put(total)


@dataclass
class Step:
    n: int
    seen: Seen
    app_cpu: float  # seconds of CPU per second of the measured window
    redis_cpu: float
    gen_cpu: float
    seconds: float

    @property
    def p50(self) -> float:
        return percentile(sorted(self.seen.latencies), 0.5)

    @property
    def p99(self) -> float:
        return percentile(sorted(self.seen.latencies), 0.99)

    @property
    def passed(self) -> bool:
        lag = percentile(sorted(self.seen.lags), 0.99)
        return (self.p99 < P99_LIMIT and self.seen.unfair == 0 and self.seen.done > 0
                and lag < LAG_LIMIT)  # fmt: skip


class Bench:
    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack, tree: str) -> None:
        self.args = args
        self.tree = Path(tree).resolve()
        self.workdir = Path(tempfile.mkdtemp(prefix="wr-bench-capacity-"))
        stack.callback(shutil.rmtree, self.workdir, True)
        port, self.redis_pid = start_redis(stack, self.workdir)
        self.url = f"redis://{HOST}:{port}/0"
        self.redis = redis.Redis.from_url(self.url)
        stack.callback(self.redis.close)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBAPP_", "WEB_"))}
        env.update(
            REDIS_URL=self.url,
            WEBAPP_ADMIN_TOKEN=ADMIN_TOKEN,
            WEBAPP_SECRET_KEY="bench-secret-key",
            WEBAPP_DATA_DIR=str(self.workdir / "data"),
            **OPEN_JOIN_LIMITS,
            WEB_WORKER_CLASS="gevent",
            WEB_CONCURRENCY=str(args.workers),
            PYTHONPATH=str(self.tree),
        )
        self.env = env
        server = ("baseline", "baseline_app:create_app()") if args.bare else ("app", "")
        name, app = server
        if not args.bare:
            app = "webapp:create_app()"
        self.port, self.pid = self.gunicorn(stack, name, app)

    def gunicorn(self, stack: contextlib.ExitStack, name: str, app: str) -> tuple[int, int]:
        """gunicorn as api_throughput.py starts it, in the tree measured (its webapp)."""
        port = free_port()
        log = self.workdir / f"{name}.log"
        argv = [sys.executable, "-m", "gunicorn", "-c", "python:webapp.web.gunicorn_conf",
                "--bind", f"{HOST}:{port}", "--pythonpath", str(BENCH_DIR), app]  # fmt: skip
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                argv, cwd=self.tree, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )  # fmt: skip
        stack.callback(stop, proc)
        wait_until(lambda: answers(port, "/ping" if name == "baseline" else "/api/rooms"),
                   proc, log)  # fmt: skip
        return port, proc.pid

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> None:
        client = KeepAlive(self.port)
        data = json.dumps(body or {}).encode()
        client.connect()
        assert client.sock is not None
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {ADMIN_TOKEN}"
            f"\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        client.sock.sendall(head.encode() + data)
        status_line = client.reader.readline()
        client.close()
        if int(status_line.split(b" ", 2)[1]) >= 400 and method != "DELETE":
            raise RuntimeError(f"{method} {path}: {status_line!r}")

    def people(self, n: int) -> list[tuple[str, float]]:
        """The line of n visitors (and the seats' first holders), each with its first
        check-in's offset from the start: within the first half of its window."""
        rng = random.Random(n)
        if self.args.bare:
            line = "bench:baseline:line"
            self.redis.delete(line)
            tokens = [f"v{n}-{i}" for i in range(n)]
            for i in range(0, n, 10_000):
                self.redis.zadd(line, {t: 1 for t in tokens[i : i + 10_000]})
            return [(t, rng.uniform(0, DROPOUT / 2)) for t in tokens]
        self.admin("DELETE", f"/api/admin/rooms/{ROOM}")
        settings = {"capacity": self.args.capacity, "typical_stay_seconds": int(self.args.hold),
                    "dropout_seconds": DROPOUT, "session_seconds": 600}  # fmt: skip
        self.admin("PUT", f"/api/admin/rooms/{ROOM}", settings)
        clock = f"wr:{{room:{ROOM}}}:clock"
        deadline = time.monotonic() + 8  # the sweep hints the pace (a tree that does)
        while not self.redis.hget(clock, "pace") and time.monotonic() < deadline:
            time.sleep(0.2)
        total = n + self.args.capacity
        done = subprocess.run(
            [sys.executable, "-c", PREFILL, self.url, ROOM, str(total), str(JOIN_BATCH)],
            cwd=self.tree, env=self.env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        out = []
        for line in done.stdout.splitlines():
            token, state, window = json.loads(line)
            w = float(window) or DROPOUT
            out.append((token, rng.uniform(0, w / 2) if state == "waiting" else 0.0))
        return out

    def step(self, n: int) -> Step:
        people = self.people(n)
        args = self.args
        t0 = time.monotonic() + 1.0
        start, end = t0 + args.warm, t0 + args.warm + args.measure
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        procs, pids = [], []
        for p in range(args.processes):
            proc = context.Process(
                target=generator,
                args=(self.port, args.bare, people[p :: args.processes], t0, start, end,
                      args.hold, args.threads, p + 1, queue),
            )  # fmt: skip
            proc.start()
            assert proc.pid is not None  # a started process has one
            procs.append(proc)
            pids.append(proc.pid)
        time.sleep(max(start - time.monotonic(), 0))
        before = (tree_cpu(self.pid), tree_cpu(self.redis_pid), [tree_cpu(p) for p in pids])
        time.sleep(max(end - time.monotonic(), 0))
        after = (tree_cpu(self.pid), tree_cpu(self.redis_pid), [tree_cpu(p) for p in pids])
        seen = Seen()
        for _ in procs:
            seen.add(queue.get(timeout=args.measure + 60))
        for proc in procs:
            proc.join(10)
        seconds = args.measure
        gen = sum(after[2]) - sum(before[2])
        return Step(n, seen, (after[0] - before[0]) / seconds, (after[1] - before[1]) / seconds,
                    gen / seconds, seconds)  # fmt: skip


def report(label: str, step: Step) -> None:
    s = step.seen
    per = 1e6 / step.n  # CPU seconds per second -> microseconds per visitor per second
    ages = sorted(s.ages)
    print(
        f"{label:<8} {step.n:>8,} {s.done / step.seconds:>8,.0f} {step.p50 * 1000:>7.1f} "
        f"{step.p99 * 1000:>7.1f} {s.unfair:>6} {s.late:>5} {s.errors:>5} "
        f"{percentile(ages, 0.5):>6.1f} {percentile(ages, 0.99):>6.1f} "
        f"{percentile(sorted(s.lags), 0.99) * 1000:>7.0f} "
        f"{step.app_cpu * per:>8.2f} {step.redis_cpu * per:>8.2f} "
        f"{step.app_cpu:>5.2f} {step.redis_cpu:>5.2f} {step.gen_cpu:>5.2f}  "
        f"{'ok' if step.passed else 'FAIL'}"
    )
    if s.first_error:
        print(f"         first error: {s.first_error}")


def run(args: argparse.Namespace) -> int:
    steps = [int(x) for x in args.steps.split(",")]
    trees = [args.tree] + ([args.against] if args.against else [])
    best: dict[str, list[int]] = {tree: [] for tree in trees}

    def work(stack: contextlib.ExitStack) -> None:
        benches = {tree: Bench(args, stack, tree) for tree in trees}
        what = "bare check-in (baseline_app.py)" if args.bare else "the app"
        print(f"capacity: {what}; gunicorn gevent, {args.workers} workers; "
              f"{args.capacity} seats held {args.hold:g} s; warm {args.warm:g} s, "
              f"measured {args.measure:g} s per N; load: {args.processes} processes x "
              f"{args.threads} threads; {os.cpu_count()} CPUs shared")  # fmt: skip
        print(f"{'tree':<8} {'N':>8} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'unfair':>6} "
              f"{'late':>5} {'err':>5} {'age50':>6} {'age99':>6} {'lag99ms':>7} {'app us':>8} "
              f"{'redis us':>8} {'app':>5} {'redis':>5} {'gen':>5}")  # fmt: skip
        live = list(trees)
        for i, n in enumerate(steps):
            order = list(live) if i % 2 == 0 else live[::-1]  # each goes first in turn
            for tree in order:
                step = benches[tree].step(n)
                report(tree_label(tree, trees), step)
                if step.passed:
                    best[tree].append(n)
                else:
                    live.remove(tree)
            if not live:
                break

    code = run_bounded(args.budget, work)
    for tree in trees:
        w = max(best[tree], default=0)
        label = "W (bare)" if args.bare else f"W {tree_label(tree, trees)}"
        print(f"{label} = {w:,} waiting visitors with p99 < {P99_LIMIT * 1000:.0f} ms and "
              f"nobody dropped unfairly (steps tried: {args.steps}; tree {tree})")  # fmt: skip
        if not args.bare and tree == args.tree:
            print(f"goal: W >= {GOAL_W:,}: {'pass' if w >= GOAL_W else 'MISS'}")
    print(
        "us: CPU microseconds per waiting visitor per second; app, redis, gen: cores "
        "busy (gen: the load generator's own); age: seconds between a visitor's replies"
    )
    return code


def tree_label(tree: str, trees: list[str]) -> str:
    return "this" if tree == trees[0] else "against"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="1000,2000,5000,10000,20000,50000,100000")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout whose app is measured")
    parser.add_argument("--against", default="", help="another checkout, interleaved")
    parser.add_argument("--bare", action="store_true", help="the bare endpoint instead")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--capacity", type=int, default=50, help="seats")
    parser.add_argument("--hold", type=float, default=10.0, help="seconds each seat is held")
    parser.add_argument("--warm", type=float, default=8.0)
    parser.add_argument("--measure", type=float, default=20.0)
    parser.add_argument("--processes", type=int, default=2, help="load generator processes")
    parser.add_argument("--threads", type=int, default=32, help="threads per generator")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds, at most")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
