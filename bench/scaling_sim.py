"""One very large room beyond one Redis core: how far the design's positions stray from
today's exact ones (docs/scaling.md).

Today every check-in is one script call that answers the exact position (ZRANK of the
line, after the upkeep). The design answers most check-ins from a per-process copy of
the room's admission frontier (the highest sequence number offered a seat) and of the
live count of the line in buckets of sequence numbers, both read once a second; a
ticket carries its own signed sequence number. This simulates a ticket sale (a million
joiners in a burst, admissions at a steady rate, dropouts) with the exact positions
kept in a Fenwick tree, and at checkpoints compares three figures for a sample of the
live line: exact, the design's bucketed estimate (from a copy up to one second old),
and the plain estimate without buckets (seq minus frontier, scaled by the line's live
share). Admission order is by sequence number in both, so fairness does not change:
only the position shown does. No Redis: a model, seeded and repeatable.

    .venv/bin/python bench/scaling_sim.py [--joiners 1000000] [--seed 1]
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time


class Fenwick:
    """Live waiting tickets by sequence number: counts of any prefix in O(log n)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.tree = [0] * (size + 1)

    def add(self, i: int, delta: int) -> None:
        while i <= self.size:
            self.tree[i] += delta
            i += i & -i

    def prefix(self, i: int) -> int:
        """Live tickets with sequence number <= i."""
        total = 0
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def simulate(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    n = args.joiners
    # Arrivals: half in the first minute of the sale, the rest over the next nine.
    arrivals = sorted(
        rng.uniform(0, 60) if rng.random() < 0.5 else rng.uniform(60, 600) for _ in range(n)
    )
    live = Fenwick(n)
    state = bytearray(n + 1)  # 0 not yet joined, 1 waiting, 2 admitted, 3 dropped
    buckets = [0] * (n // args.bucket + 2)  # live waiting count per bucket of seq numbers
    leaving: list[tuple[float, int]] = []  # (time it gives up, seq)
    joined = 0  # the highest seq handed out
    frontier = 0  # the highest seq admitted (offered a seat)
    waiting = 0
    admitted = dropped = 0
    checkpoints = set(args.checkpoints)
    rows = []
    snapshot = (0, 0, 0, list(buckets))  # the per-process copy: (frontier, joined, waiting, b)
    t = 0
    began = time.monotonic()
    while joined < n or waiting > 0:
        # The copy each process reads once a second (at the start of the second).
        snapshot = (frontier, joined, waiting, list(buckets))
        # Joins in this second.
        while joined < n and arrivals[joined] < t + 1:
            joined += 1
            state[joined] = 1
            live.add(joined, 1)
            buckets[joined // args.bucket] += 1
            waiting += 1
            heapq.heappush(
                leaving, (arrivals[joined - 1] + rng.expovariate(1 / args.patience), joined)
            )
        # Dropouts in this second.
        while leaving and leaving[0][0] < t + 1:
            _, seq = heapq.heappop(leaving)
            if state[seq] == 1:
                state[seq] = 3
                live.add(seq, -1)
                buckets[seq // args.bucket] -= 1
                waiting -= 1
                dropped += 1
        # Admissions in this second, in seq order (the same in both designs).
        quota = args.rate
        while quota > 0 and frontier < joined:
            frontier += 1
            if state[frontier] == 1:
                state[frontier] = 2
                live.add(frontier, -1)
                buckets[frontier // args.bucket] -= 1
                waiting -= 1
                admitted += 1
                quota -= 1
        t += 1
        if t in checkpoints and waiting > 0:
            rows.append(compare(rng, args, live, state, joined, snapshot, t, waiting))
    seconds = time.monotonic() - began
    print(
        f"ticket sale: {n:,} joiners (half in the first minute, the rest within 10), "
        f"{args.rate}/s admitted, patience exponential with mean {args.patience:.0f} s; "
        f"buckets of {args.bucket:,} seq numbers; copy read once a second; seed {args.seed}"
    )
    print(f"done at t = {t} s: {admitted:,} admitted, {dropped:,} dropped out ({seconds:.0f} s)")
    print()
    print(
        f"{'t s':>6} {'line':>9} | {'bucketed: median':>16} {'p95':>7} {'max':>7} {'p95 %':>6}"
        f" | {'plain: median':>13} {'p95':>7} {'max':>7} {'p95 %':>6}"
    )
    for row in rows:
        print(
            f"{row['t']:>6} {row['line']:>9,} | {row['b_med']:>16.0f} {row['b_p95']:>7.0f}"
            f" {row['b_max']:>7.0f} {row['b_pct']:>6.2f} | {row['p_med']:>13.0f}"
            f" {row['p_p95']:>7.0f} {row['p_max']:>7.0f} {row['p_pct']:>6.2f}"
        )
    print()
    print(
        "errors: |shown position - exact position| over a sample of the live line, in "
        "places; p95 %: the 95th percentile of that error relative to the exact position"
    )
    print(
        "fairness: admissions follow sequence numbers in both designs, so who gets in and "
        "when is the same; a dropout is seen at most one second later (check-ins are "
        "written in batches once a second)"
    )
    # A copy up to a second old is behind by up to a second of the line's progress
    # (admissions and dropouts): the figure is judged in those seconds.
    steady = [row for row in rows if row["t"] >= 60]
    worst = max((row["b_p95"] / args.rate for row in steady), default=0.0)
    verdict = "pass" if worst <= args.goal else "MISS"
    print(
        f"  {verdict}  bucketed position p95 error <= {args.goal:g} s of the line's progress "
        f"(from t = 60 s): {worst:.2f} s ({args.rate} admissions/s)"
    )


def compare(
    rng: random.Random,
    args: argparse.Namespace,
    live: Fenwick,
    state: bytearray,
    joined: int,
    snapshot: tuple[int, int, int, list[int]],
    t: int,
    waiting: int,
) -> dict[str, float]:
    """Exact, bucketed and plain positions of a sample of the live line."""
    frontier, known, line, counts = snapshot
    size = args.bucket
    bucketed: list[float] = []
    plain: list[float] = []
    exacts: list[int] = []
    share = line / max(known - frontier, 1)  # the live share of seq numbers past the frontier
    tries = 0
    while len(bucketed) < args.sample and tries < args.sample * 50:
        tries += 1
        seq = rng.randint(1, known)  # a ticket the copy knows (a join answers exactly)
        if state[seq] != 1:
            continue
        exact = live.prefix(seq)  # position: live waiting tickets up to and with this one
        # Bucketed: the live counts of the buckets from the frontier's up to this
        # ticket's (nobody at or below the frontier still waits), plus the share of its
        # own bucket's live count that lies below it.
        b = seq // size
        ahead = float(sum(counts[frontier // size : b]))
        start = max(b * size, frontier + 1)
        ahead += counts[b] * (seq - start) / max((b + 1) * size - start, 1)
        estimate = max(round(ahead) + 1, 1)
        flat = max(round((seq - frontier - 1) * share) + 1, 1)
        bucketed.append(abs(estimate - exact))
        plain.append(abs(flat - exact))
        exacts.append(exact)
    row: dict[str, float] = {"t": t, "line": waiting}
    for prefix, errors in (("b", bucketed), ("p", plain)):
        if not errors:
            row.update({f"{prefix}_med": 0, f"{prefix}_p95": 0, f"{prefix}_max": 0,
                        f"{prefix}_pct": 0})  # fmt: skip
            continue
        relative = [e / x * 100 for e, x in zip(errors, exacts, strict=True)]
        row[f"{prefix}_med"] = statistics.median(errors)
        row[f"{prefix}_p95"] = percentile(errors, 0.95)
        row[f"{prefix}_max"] = max(errors)
        row[f"{prefix}_pct"] = percentile(relative, 0.95)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--joiners", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=500, help="admissions per second")
    parser.add_argument("--patience", type=float, default=1800.0, help="mean seconds to give up")
    parser.add_argument("--bucket", type=int, default=10_000, help="seq numbers per bucket")
    parser.add_argument("--sample", type=int, default=2000, help="tickets compared per checkpoint")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--goal", type=float, default=2.0, help="p95 error, in s of progress")
    parser.add_argument(
        "--checkpoints",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[30, 60, 300, 600, 900, 1200],
        help="seconds at which positions are compared",
    )
    simulate(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
