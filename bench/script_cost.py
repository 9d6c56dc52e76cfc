"""Each room script's own time in Redis: this tree against another revision, side by side.

For a change to ``webapp/lua`` that must not make a script slower (issue 22 rearranged
the room scripts' libraries). Starts one private redis-server and takes the other
revision's ``webapp`` with ``git archive``. Each round starts one worker process per
tree (the same Python, the tree's own ``webapp`` first on its path), each building the
same rooms under its own key prefix through ``WaitingRooms`` and ``Waitlists``. Then,
operation by operation, both workers run their calls at the same time, so Redis runs
the two trees' scripts interleaved, under the same load. Redis's slow log, set to log
every command, gives each call's own time in Redis (the commands a script runs
included, the network and the client not) and, by the client's name, whose call it
was. Prints, per operation and script, the median over the rounds of each tree's mean,
and the median and range of the rounds' ratios (each round's pair ran side by side).
Both trees must offer the domain calls below (``WaitingRooms``' and ``Waitlists``'
public methods).

    .venv/bin/python bench/script_cost.py [--against main] [--rounds 7] [--calls 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_CALLS = (b"EVALSHA", b"EVAL")
SLOWLOG_LEN = 50_000  # entries the slow log keeps: both trees' calls of one operation
LONG = {"dropout_seconds": 3600, "session_seconds": 86400}

# operation -> the script it times (one line of the table each)
OPERATIONS = {
    "join, admitted": "room_join",
    "join, to the line": "room_join",
    "check-in, waiting": "room_checkin",
    "check-in, admitted": "room_checkin",
    "presence beat": "room_presence",
    "move in line": "room_move",
    "leave the line": "room_leave",
    "admit the head": "room_admit",
    "sweep, nothing due": "room_sweep",
    "configure capacity": "room_configure",
    "notice": "room_notice",
    "rename": "room_rename",
    "email": "room_email",
    "waitlist join": "waitlist_join",
    "waitlist confirm": "waitlist_confirm",
    "waitlist position": "waitlist_position",
}


def scenario(url: str, prefix: str, calls: int) -> dict[str, Callable[[int], Any]]:
    """The rooms each operation runs in, filled; each operation takes its call's index
    (0 warms it up, then 1..calls), so one that uses up state has one ticket a call."""
    from webapp.domain.rooms import WaitingRooms
    from webapp.domain.waitlist import Waitlists
    from webapp.redis.keys import Keys

    client = redis.Redis.from_url(url, decode_responses=True)
    if "scripts" in inspect.signature(WaitingRooms).parameters:  # since the services' root
        from webapp.redis.scripts import Scripts

        rooms = WaitingRooms(client, Keys(prefix), Scripts(client))
    else:  # an older tree (--against), from before it: no scripts parameter
        rooms = WaitingRooms(client, Keys(prefix))  # type: ignore[call-arg]
    waitlists = Waitlists(rooms, secret="bench")
    n = calls + 1

    def room(name: str, capacity: int, waiting: int = 0, seated: int = 0) -> list[str]:
        rooms.configure(name, {"capacity": capacity, **LONG})
        people = [rooms.join(name).token for _ in range(seated)]
        return people + [rooms.join(name).token for _ in range(waiting)]

    room("cost-join-admitted", 10**6)
    room("cost-join-line", 1, seated=1)
    waiting = room("cost-waiting", 1, seated=1, waiting=200)[1:]
    seated = room("cost-seated", 10**6, seated=200)
    leaving = room("cost-leave", 1, seated=1, waiting=n)[1:]
    room("cost-admit", 1, seated=1, waiting=n)
    room("cost-conf", 5)
    rooms.configure("cost-list", {"kind": "waitlist", "capacity": 1})
    entries = [
        waitlists.join("cost-list", f"Entry {i}", f"entry{i}@example.org").id for i in range(n)
    ]
    return {
        "join, admitted": lambda i: rooms.join("cost-join-admitted"),
        "join, to the line": lambda i: rooms.join("cost-join-line"),
        "check-in, waiting": lambda i: rooms.check_in("cost-waiting", waiting[i % 200]),
        "check-in, admitted": lambda i: rooms.check_in("cost-seated", seated[i % 200]),
        "presence beat": lambda i: rooms.presence("cost-seated", seated[i % 200], "beat", 60),
        "move in line": lambda i: rooms.move("cost-waiting", waiting[i % 200], i % 50 + 1, "b"),
        "leave the line": lambda i: rooms.leave("cost-leave", leaving[i]),
        "admit the head": lambda i: rooms.admit("cost-admit", 1, override=True, who="b"),
        "sweep, nothing due": lambda i: rooms.sweep("cost-seated"),
        "configure capacity": lambda i: rooms.configure("cost-conf", {"capacity": 5 + i % 2}),
        "notice": lambda i: rooms.set_notice("cost-seated", f"notice {i % 2}", "b"),
        "rename": lambda i: rooms.rename("cost-seated", seated[i % 200], f"Name {i % 3}"),
        "email": lambda i: rooms.set_email("cost-waiting", waiting[i % 200], "a@example.org"),
        "waitlist join": lambda i: waitlists.join("cost-list", "New", f"new{i}@example.org"),
        "waitlist confirm": lambda i: waitlists.confirm("cost-list", entries[i]),
        "waitlist position": lambda i: waitlists.position("cost-list", entries[i]),
    }


def worker(tree: str, url: str, name: str, calls: int) -> None:
    """One tree's side of a round: builds the rooms, then for each operation warms it up,
    says ``ready``, waits for ``go`` on stdin, runs ``calls`` calls and says ``done``."""
    sys.path.insert(0, tree)
    import webapp

    assert Path(webapp.__file__).resolve().is_relative_to(Path(tree).resolve()), webapp.__file__
    ops = scenario(url + f"?client_name={name}", name, calls)
    for op in ops.values():
        op(0)  # the script loaded, the room warm
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(1, calls + 1):
            op(i)
        print("done", flush=True)


def middle_mean(times: list[int]) -> float:
    """The mean of the middle 80%: a call the OS paused Redis in is not the script's."""
    ordered = sorted(times)
    cut = len(ordered) // 10
    return statistics.fmean(ordered[cut : len(ordered) - cut] or ordered)


def side_by_side(
    client: Any, trees: dict[str, str], url: str, calls: int
) -> dict[str, dict[str, float]]:
    """One round: {tree name: {operation: mean microseconds per script call}}."""
    workers = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--worker", tree, url, f"t{n}", str(calls)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n, (name, tree) in enumerate(trees.items())
    }
    by_client = {f"t{n}": name for n, name in enumerate(trees)}
    out: dict[str, dict[str, float]] = {name: {} for name in trees}
    try:
        for label in OPERATIONS:
            for w in workers.values():
                assert w.stdout is not None and w.stdout.readline().strip() == "ready"
            client.slowlog_reset()
            for w in workers.values():
                assert w.stdin is not None
                w.stdin.write("go\n")
                w.stdin.flush()
            for w in workers.values():
                assert w.stdout is not None and w.stdout.readline().strip() == "done"
            times: dict[str, list[int]] = {name: [] for name in trees}
            for entry in client.slowlog_get(SLOWLOG_LEN):
                command = entry["command"].split(b" ", 1)[0].upper()
                name = by_client.get(entry.get("client_name", b"").decode())
                if command in SCRIPT_CALLS and name is not None:
                    times[name].append(int(entry["duration"]))
            for name, each in times.items():
                out[name][label] = middle_mean(each)
    finally:
        for w in workers.values():
            w.kill()
            w.wait()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="main", help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=7, help="rounds, each with fresh rooms")
    parser.add_argument("--calls", type=int, default=1000, help="calls per operation a round")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        tree, url, name, calls = args.worker
        worker(tree, url, name, int(calls))
        return 0

    from servers import HOST, run_bounded, start_redis

    def work(stack: contextlib.ExitStack) -> None:
        workdir = Path(tempfile.mkdtemp(prefix="wr-bench-scripts-"))
        stack.callback(shutil.rmtree, workdir, True)
        other = workdir / "other"
        other.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.against, "webapp"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(other)], input=archive, check=True)
        port, _ = start_redis(stack, workdir)
        url = f"redis://{HOST}:{port}/0"
        client = redis.Redis(host=HOST, port=port)
        client.config_set("slowlog-log-slower-than", 0)  # every command, with its time
        client.config_set("slowlog-max-len", SLOWLOG_LEN)
        trees = {args.against: str(other), "this tree": str(ROOT)}
        figures: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        for round_ in range(args.rounds):
            client.flushall()
            # Every other round the other tree goes first and takes the other prefix
            order = dict(reversed(trees.items())) if round_ % 2 else trees
            for name, means in side_by_side(client, order, url, args.calls).items():
                for label, mean in means.items():
                    figures[name].setdefault(label, []).append(mean)
            print(f"  round {round_ + 1} of {args.rounds} done", file=sys.stderr)
        before, after = figures[args.against], figures["this tree"]
        print(
            f"script time in Redis per call, µs (slow log): the median over {args.rounds} "
            f"rounds of each round's mean (middle 80%) of {args.calls} calls, both trees' "
            f"calls interleaved; ratio: the median of the rounds' ratios (this tree / "
            f"{args.against}), and their range"
        )
        print(
            f"{'operation':<22} {'script':<18} {args.against:>10} {'this tree':>10} "
            f"{'ratio':>6}  {'range':<11}"
        )
        for label, script in OPERATIONS.items():
            a, b = statistics.median(before[label]), statistics.median(after[label])
            ratios = [y / x for x, y in zip(before[label], after[label], strict=True)]
            ratio, low, high = statistics.median(ratios), min(ratios), max(ratios)
            print(
                f"{label:<22} {script:<18} {a:>10.1f} {b:>10.1f} {ratio:>6.2f}  "
                f"{low:.2f}-{high:.2f}"
            )

    return run_bounded(1800, work)


if __name__ == "__main__":
    sys.exit(main())
