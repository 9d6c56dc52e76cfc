"""A line of a million on a simulated clock: the check-ins per second it causes with the
check-in windows of issue 26, against the rule of old (docs/scaling.md).

No Redis, no sockets: the line drains at a steady pace on a simulated clock (one step a
second, as in bench/estimate_accuracy.py), people keep joining at the back, and every
waiting visitor checks in exactly as often as the app tells them: ``poll_after`` from
``webapp.domain.estimate`` and the window from ``webapp.domain.windows`` (the same
arithmetic as room_windows.lua), for where they stand: the window less its margin
(``estimate.poll_margin``, issue 32), and for comparison at half the window (issue
26's rule). The rule of old is the same ``poll_after`` capped at half of
``dropout_seconds`` wherever one stands. Positions are
contiguous, so the check-ins per second of a line of L is the sum over k < L of
1 / poll(k): one prefix sum, exact for visitors who poll on time.

It also runs the windows on ghosts: a share of the line stops checking in at random
times; each is dropped when its window ends, and the simulation records how far from
the head it was then (never at the head: the window shrinks as the line comes nearer).

    .venv/bin/python bench/windows_sim.py [--line 1000000] [--pace 50] [--caps 300,600]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
import sys
import time

from webapp.domain import estimate, windows
from webapp.domain.pace import Rates

GOAL = 5_000.0  # check-ins per second for a line of a million (issue 26)
DROPOUT = 30


def room(pace: float, capacity: int) -> Rates:
    """A big room's measured pace: ``pace`` admissions a second, 90% of those ahead
    stay, the pace known within 10% (rate_error 0.01)."""
    return Rates(service=pace, c2=1.0, cs2=1.0, stay=0.9, capacity=capacity, rate_error=0.01)


def grid(line: int) -> list[int]:
    """Positions (people ahead) at which the poll interval is worked out: every one up
    to 1,000, then 0.5% apart (the interval changes slowly so far back)."""
    points = list(range(0, min(line, 1000)))
    k = 1000.0
    while k < line:
        points.append(int(k))
        k *= 1.005
    points.append(line)
    return sorted(set(points))


def poll(
    rates: Rates, hint: windows.Hint | None, ahead: int, cap: int, new: bool, half: bool = False
) -> float:
    """The poll interval at ``ahead``: ``new`` with the windows, ``half`` at half the
    window granted (issue 26's rule, before the margin of issue 32)."""
    wait = estimate.wait_for(rates, ahead)
    if not new:
        return estimate.poll_after(DROPOUT, ahead + 1, wait)
    granted = windows.window(hint, ahead, DROPOUT, cap)
    polled = estimate.poll_after(DROPOUT, ahead + 1, wait, granted)
    return min(polled, granted / 2) if half else polled


def rate_table(
    rates: Rates, line: int, cap: int, new: bool, half: bool = False
) -> tuple[list[int], list[float]]:
    """Check-ins per second of the first k people, at the grid's points: between two
    points the interval of the nearer one to the head is taken (the shorter: an upper
    bound of the rate)."""
    hint = windows.hint(rates)
    points = grid(line)
    sums, total = [0.0], 0.0
    for a, b in itertools.pairwise(points):
        total += (b - a) / poll(rates, hint, a, cap, new, half)
        sums.append(total)
    return points, sums


def checkins(points: list[int], sums: list[float], length: int) -> float:
    """Check-ins per second of a line of ``length``."""
    i = bisect.bisect_right(points, length) - 1
    if i >= len(sums) - 1:
        return sums[-1]
    share = (length - points[i]) / max(points[i + 1] - points[i], 1)
    return sums[i] + share * (sums[i + 1] - sums[i])


def drain(
    points: list[int], sums: list[float], line: int, pace: float, join: float, seconds: int
) -> tuple[float, float]:
    """The line on a simulated clock: ``pace`` admitted and ``join`` joining a second.
    Returns the check-ins per second at the start and their mean over ``seconds``."""
    length, first, total = float(line), 0.0, 0.0
    for t in range(seconds):
        rate = checkins(points, sums, int(length))
        first = rate if t == 0 else first
        total += rate
        length = max(length - pace + join, 0.0)
    return first, total / seconds


def ghosts(
    rates: Rates, cap: int | None, line: int, share: float, seed: int
) -> tuple[int, int, float]:
    """``share`` of the line stop checking in, each right after a check-in at a random
    place: dropped when the window granted there runs out, by which time the line has
    moved on by pace * window. Returns ghosts, ghosts that would reach the head first,
    and the median position (people ahead) at which they are dropped. ``cap`` None:
    the rule of old (every window dropout_seconds). A ghost that reaches the head
    within its window last checked in within dropout_seconds: it may be offered a seat
    under either rule, as it still may be there; one on a longer window is passed over
    (room_windows.lua)."""
    rng = random.Random(seed)
    hint = windows.hint(rates)
    count = int(line * share)
    reached, left = 0, []
    for _ in range(count):
        ahead = rng.randrange(line)
        w = DROPOUT if cap is None else windows.window(hint, ahead, DROPOUT, cap)
        moved = rates.service * w / rates.stay  # places the line moves within the window
        if moved >= ahead:
            reached += 1
        left.append(max(ahead - moved, 0.0))
    left.sort()
    return count, reached, left[len(left) // 2] if left else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--line", type=int, default=1_000_000, help="people waiting")
    parser.add_argument("--pace", type=float, default=50.0, help="admissions per second")
    parser.add_argument("--capacity", type=int, default=3000, help="seats")
    parser.add_argument("--caps", default="300,600,900", help="max_checkin_seconds to try")
    parser.add_argument("--seconds", type=int, default=600, help="simulated seconds")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    began = time.process_time()
    rates = room(args.pace, args.capacity)
    caps = [int(c) for c in args.caps.split(",")]
    print(
        f"a line of {args.line:,}: {args.pace:g} admitted a second ({args.capacity:,} seats), "
        f"as many joining; dropout_seconds {DROPOUT}; {args.seconds} simulated seconds"
    )
    points, sums = rate_table(rates, args.line, DROPOUT, new=False)
    old_first, old_mean = drain(points, sums, args.line, args.pace, args.pace, args.seconds)
    print(f"{'rule':<36} {'check-ins/s':>12} {'mean':>10} {'per visitor':>12}")
    print(f"{'before windows: every dropout/2':<36} {old_first:>12,.0f} {old_mean:>10,.0f} "
          f"{old_first / args.line:>12.4f}")  # fmt: skip
    halves = {}
    for cap in caps:
        points, sums = rate_table(rates, args.line, cap, new=True, half=True)
        first, mean = drain(points, sums, args.line, args.pace, args.pace, args.seconds)
        halves[cap] = first
        label = f"polls at window/2, cap {cap}"
        print(f"{label:<36} {first:>12,.0f} {mean:>10,.0f} {first / args.line:>12.4f}")
    results = {}
    for cap in caps:
        points, sums = rate_table(rates, args.line, cap, new=True)
        first, mean = drain(points, sums, args.line, args.pace, args.pace, args.seconds)
        results[cap] = first
        label = f"polls at window - margin, cap {cap}"
        print(f"{label:<36} {first:>12,.0f} {mean:>10,.0f} {first / args.line:>12.4f}")
    print()
    print(f"{'ghosts (10% of the line)':<36} {'dropped':>12} {'at the head':>12} "
          f"{'median ahead':>13}")  # fmt: skip
    count, reached, median = ghosts(rates, None, args.line, 0.1, args.seed)
    print(f"{'today':<36} {count:>12,} {reached:>12,} {median:>13,.0f}")
    for cap in caps:
        count, reached, median = ghosts(rates, cap, args.line, 0.1, args.seed)
        label = f"max_checkin_seconds {cap}"
        print(f"{label:<36} {count:>12,} {reached:>12,} {median:>13,.0f}")
    cap = caps[0]
    far = cap - estimate.poll_margin(DROPOUT, cap)
    print()
    print(f"the cap alone: a line of {args.line:,} polling every {far:g} s "
          f"(max_checkin_seconds {cap} less the margin) makes {args.line / far:,.0f} "
          f"check-ins/s; at half of it ({cap / 2:g} s), {2 * args.line / cap:,.0f}")  # fmt: skip
    best = min(results.values())
    default = results.get(300, results[caps[0]])
    before = halves.get(300, halves[caps[0]])
    print(f"goal: a line of {args.line:,} at <= {GOAL:,.0f} check-ins/s with the defaults "
          f"(max_checkin_seconds 300): {default:,.0f}/s {'pass' if default <= GOAL else 'MISS'} "
          f"(before, polling at half the window: {before:,.0f}/s "
          f"{'pass' if before <= GOAL else 'MISS'}); best tried {best:,.0f}/s; "
          f"before windows {old_first:,.0f}/s")  # fmt: skip
    print(f"(simulator CPU {time.process_time() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
