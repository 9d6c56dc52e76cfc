"""Bots against people (issue 25; docs/operations.md, "Bots and abuse"): the app under
gunicorn (2 workers, its own embedded Redis, the default per-address limits), a live
room with ``challenge: auto`` (the default threshold and cost) where nobody is let in,
so a join's position is where it stands. For each scenario a fresh room:

- ``people``: 50 scripted people join at a human pace over the run, each from an
  address of their own; a person asked for the puzzle waits as their browser would
  (``--solve-delay`` seconds for the default ``challenge_cost``, in proportion to the
  work asked: Chromium's median, ``bench/challenge_cost.py``) and solves it;
- ``one address``: the same, while a swarm tries joins at 5,000 a minute from
  127.0.0.2;
- ``256 addresses``: the same, the swarm spread over 256 addresses, each in a /24 of
  its own (127.N.0.3), so the network limit does not hold it either;
- ``identity``: the same swarm, in a room with ``identity: required`` (issue 29): each
  person joins with the site's signed token for their own account, the swarm with
  tokens for the ``--accounts`` accounts it holds at the site (5: a swarm's operator
  signed up a handful; the site's own sign-up gates more), one place each.

The swarm solves every puzzle it is asked (the ``altcha`` library's solver: PBKDF2 in
hashlib, one thread per join, as native as a browser's WebCrypto) and never retries a
429. Prints, per scenario, the
swarm's joins tried and let in line, its CPU seconds (its whole process: HTTP and
solving) per join let in, and the people's median position against the run without a
swarm. Bounded: ``--seconds`` per scenario (20: the rates are per minute, so a run sees
a third of a minute of them).

    .venv/bin/python bench/bots.py [--seconds 20] [--rate 5000] [--people 50]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import jwt
from servers import HOST, answers, free_port, spawn, stop, wait_until

from webapp.domain.settings import CHALLENGE_COST

ADMIN = "bench-admin-token-0123456789"
IDENTITY_SECRET = "bench identity secret of the site, 32+ chars"
SWARM_THREADS = 16
BROWSER_WORK = CHALLENGE_COST  # the work a person's browser solves in --solve-delay seconds
SOLVE_DELAY = 1.6  # Chromium's median at BROWSER_WORK (bench/challenge_cost.py, docs/operations.md)


def call(port: int, source: str, path: str, body: dict[str, Any], headers: dict[str, str],
         method: str = "POST") -> tuple[int, dict[str, Any]]:  # fmt: skip
    """One request from the loopback address ``source``."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30, source_address=(source, 0))
    try:
        data = json.dumps(body).encode() if method != "GET" else None
        conn.request(method, path, body=data,
                     headers={"Content-Type": "application/json", **headers})  # fmt: skip
        reply = conn.getresponse()
        text = reply.read()
        try:
            found = json.loads(text) if text else {}
        except ValueError:
            found = {}
        return reply.status, found if isinstance(found, dict) else {}
    finally:
        conn.close()


def solve(challenge: dict[str, Any]) -> str:
    from altcha import Challenge, Payload, Solution, solve_challenge

    made = Challenge.from_dict(challenge)
    found = solve_challenge(made, timeout=120) or Solution(0, "")
    return Payload(made, found).to_base64()


def identity(room: str, account: str | None) -> dict[str, str]:
    """The site's signed token for ``account`` (a fresh jti each), or nothing."""
    if account is None:
        return {}
    claims = {"sub": account, "aud": room, "exp": int(time.time()) + 300,
              "jti": os.urandom(9).hex()}  # fmt: skip
    return {"identity": jwt.encode(claims, IDENTITY_SECRET, algorithm="HS256")}


def join(port: int, source: str, room: str, key: str, delay: float = 0.0,
         account: str | None = None) -> tuple[int, int, str]:  # fmt: skip
    """A join, solving the puzzle if asked (after ``delay``: a browser's time), as the
    site's ``account`` when given; its status and, when let in line, its position and
    ticket."""
    headers = {"Idempotency-Key": key}
    path = f"/api/rooms/{room}/join"
    status, body = call(port, source, path, identity(room, account), headers)
    if status == 403 and body.get("error") == "challenge_required":
        if delay:  # a browser's time grows with the puzzle's work (docs/operations.md)
            time.sleep(delay * body["challenge"]["maxnumber"] / BROWSER_WORK)
        payload = solve(body["challenge"])
        status, body = call(port, source, path, {"altcha": payload, **identity(room, account)},
                            headers)  # fmt: skip
    return status, int(body.get("position", 0)) if status == 200 else 0, body.get("token", "")


def swarm(port: int, room: str, sources: list[str], rate: float, seconds: float,
          accounts: int, out: Any) -> None:  # fmt: skip
    """The swarm's process: joins at ``rate`` a minute for ``seconds``; reports what
    got in and its own CPU seconds."""
    began = time.monotonic()
    total = int(rate * seconds / 60)
    lock = threading.Lock()
    counts = {"tried": 0, "in": 0, "limited": 0, "refused": 0, "overlaps": 0}
    places: set[str] = set()
    let_in: list[float] = []  # when each join let in was answered
    held: dict[str, str] = {}  # an account's last place
    turn = iter(range(total))

    def run() -> None:
        while True:
            with lock:
                i = next(turn, None)
            if i is None:
                return
            due = began + i * 60 / rate
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            if time.monotonic() > began + seconds + 5:
                return  # fell behind: the run is bounded
            source = sources[i % len(sources)]
            try:
                account = f"bot-{i % accounts}" if accounts else None
                status, _, ticket = join(port, source, room, f"bot-{os.getpid()}-{i}",
                                         account=account)  # fmt: skip
            except OSError:
                status, ticket = 0, ""
            with lock:
                counts["tried"] += 1
                key = "in" if status == 200 else "limited" if status == 429 else "refused"
                counts[key] += 1
                before = None
                if status == 200:
                    places.add(ticket)  # an account's joins after its first: its one place
                    let_in.append(time.monotonic())
                    if account is not None:
                        before, held[account] = held.get(account), ticket
            # a new place for an account: its last one must have ended (dropped out: the
            # swarm never checks in), or the account held two places at once
            if before not in (None, ticket) and holds(port, source, room, str(before)):
                with lock:
                    counts["overlaps"] += 1

    threads = [threading.Thread(target=run) for _ in range(SWARM_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    counts["in"] = len(places)  # places held, however many joins answered one
    counts["minute"] = most_in_a_minute(let_in)
    out.put({**counts, "cpu": usage.ru_utime + usage.ru_stime})


def holds(port: int, source: str, room: str, ticket: str) -> bool:
    """Whether ``ticket`` is a live place still (its check-in answers 200)."""
    status, _ = call(port, source, f"/api/rooms/{room}/position/{ticket}", {}, {}, "GET")
    return status == 200


def most_in_a_minute(moments: list[float]) -> int:
    """The most of ``moments`` within any 60 s (the join limit's window)."""
    ordered, most, first = sorted(moments), 0, 0
    for last, moment in enumerate(ordered):
        while moment - ordered[first] >= 60:
            first += 1
        most = max(most, last - first + 1)
    return most


def people(port: int, room: str, n: int, seconds: float, delay: float, base: int,
           accounts: bool = False) -> list[int]:  # fmt: skip
    """``n`` people, each at a random moment of the run, from an address of their own
    (``accounts``: each signed in at the site with an account of their own)."""
    rng = random.Random(base)
    positions: list[int] = []
    lock = threading.Lock()

    def person(i: int) -> None:
        time.sleep(moments[i])
        source = f"127.{base}.{i // 250}.{i % 250 + 1}"
        try:
            account = f"person-{i}" if accounts else None
            status, position, _ = join(port, source, room, f"person-{base}-{i}", delay, account)
        except OSError:  # the app under the swarm dropped the connection: no place
            return
        if status == 200:
            with lock:
                positions.append(position)

    moments = sorted(rng.uniform(0, seconds) for _ in range(n))
    threads = [threading.Thread(target=person, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=5000.0, help="swarm joins a minute")
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--solve-delay", type=float, default=SOLVE_DELAY,
                        help=f"a browser's seconds for a cost of {BROWSER_WORK:,}")  # fmt: skip
    parser.add_argument("--challenge", default="auto", choices=("off", "on", "auto"))
    parser.add_argument("--cost", type=int, default=CHALLENGE_COST, help="challenge_cost")
    parser.add_argument("--accounts", type=int, default=5,
                        help="site accounts the swarm holds (identity)")  # fmt: skip
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="wr-bench-bots-")
    port = free_port()
    url = f"http://{HOST}:{port}"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env.update(WEB_CONCURRENCY="2", WEBAPP_DATA_DIR=directory, WEBAPP_ADMIN_TOKEN=ADMIN,
               WEBAPP_SECRET_KEY="bench-secret-key-0123456789")  # fmt: skip
    log = Path(directory) / "gunicorn.log"
    argv = [sys.executable, "-m", "gunicorn", "-c", "python:webapp.web.gunicorn_conf",
            "--bind", f"{HOST}:{port}",
            "webapp:create_app()"]  # fmt: skip
    process = spawn(argv, log, env)
    try:
        wait_until(lambda: answers(f"{url}/api/rooms"), process, log)
        wide = [f"127.{n}.0.3" for n in range(256)]
        scenarios = [  # label, the swarm's addresses, the site's identity required
            ("people", [], False),
            ("one address", ["127.0.0.2"], False),
            ("256 addresses", wide, False),
            ("identity", wide, True),
        ]
        print(f"{args.seconds:g} s per scenario; swarm {args.rate:g} joins a minute, "
              f"{args.people} people; challenge {args.challenge} (threshold 600, cost "
              f"{args.cost:,})")  # fmt: skip
        head = f"{'scenario':<14} {'tried':>6} {'in line':>7} {'429':>5} {'403':>5} "
        print(head + f"{'swarm CPU s':>11} {'CPU s/place':>11} {'people median':>13} {'x':>5}")
        baseline = 0.0
        rows: dict[str, tuple[int, float, float]] = {}  # scenario: (in line, CPU/place, x)
        held: dict[str, tuple[int, int]] = {}  # scenario: (most let in a minute, overlaps)
        for k, (label, sources, vouched) in enumerate(scenarios):
            room = f"bots-{k}"
            settings = {"capacity": 1, "admission_mode": "manual", "challenge": args.challenge,
                        "challenge_cost": args.cost}  # fmt: skip
            if vouched:
                settings |= {"identity": "required", "identity_secret": IDENTITY_SECRET}
            admin = urllib.request.Request(
                f"{url}/api/admin/rooms/{room}",
                data=json.dumps(settings).encode(),
                method="PUT",
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {ADMIN}"},
            )
            urllib.request.urlopen(admin, timeout=10).close()
            found: dict[str, Any] = {"tried": 0, "in": 0, "limited": 0, "refused": 0,
                                     "cpu": 0.0, "overlaps": 0, "minute": 0}  # fmt: skip
            child = None
            queue: Any = multiprocessing.get_context("fork").Queue()
            if sources:
                child = multiprocessing.get_context("fork").Process(
                    target=swarm,
                    args=(
                        port,
                        room,
                        sources,
                        args.rate,
                        args.seconds,
                        args.accounts if vouched else 0,
                        queue,
                    ),
                )
                child.start()
            positions = people(port, room, args.people, args.seconds, args.solve_delay, 200 + k,
                               accounts=vouched)  # fmt: skip
            if child is not None:
                found = queue.get(timeout=args.seconds + 120)
                child.join()
            median = statistics.median(positions) if positions else float("nan")
            if not sources:
                baseline = median
            per = found["cpu"] / found["in"] if found["in"] else float("nan")
            ratio = median / baseline if baseline else float("nan")
            print(f"{label:<14} {found['tried']:>6} {found['in']:>7} {found['limited']:>5} "
                  f"{found['refused']:>5} {found['cpu']:>11.1f} {per:>11.3f} "
                  f"{median:>13.1f} {ratio:>5.1f}")  # fmt: skip
            rows[label] = (int(found["in"]), per if found["in"] else math.inf, ratio)
            held[label] = (int(found["minute"]), int(found["overlaps"]))
        goals(rows, held)
    finally:
        stop(process, timeout=15)
        shutil.rmtree(directory, ignore_errors=True)


def goals(rows: dict[str, tuple[int, float, float]], held: dict[str, tuple[int, int]]) -> None:
    """Issue 25's goals, each with pass or MISS: from one address the swarm is let in at
    most the join limit's 20 times in any minute (WEBAPP_JOIN_LIMIT's default) and
    people's median place is at most 2x; spread wide, the swarm pays at least 0.5
    CPU-seconds a place and people's median place is at most 2x; with the site's
    identity required (issue 29), no account holds two places at once (a place the
    swarm never checks in drops out after the check-in window, and its account may
    join again) and people's median place is at most 1.5x."""
    one_minute, _ = held["one address"]
    one_x = rows["one address"][2]
    _, wide_cpu, wide_x = rows["256 addresses"]
    vouched_in, _, vouched_x = rows["identity"]
    overlaps = held["identity"][1]
    print("\ngoals")
    for label, ok in (
        (f"one address let in at most 20 times a minute: {one_minute}", one_minute <= 20),
        (f"one address: people's median place {one_x:.1f}x (at most 2x)", one_x <= 2),
        (f"spread wide: {wide_cpu:.3f} CPU-s a place (at least 0.5)", wide_cpu >= 0.5),
        (f"spread wide: people's median place {wide_x:.1f}x (at most 2x)", wide_x <= 2),
        (
            f"identity required: two places at once for {overlaps} accounts ({vouched_in} "
            "in the run)",
            overlaps == 0,
        ),
        (
            f"identity required: people's median place {vouched_x:.1f}x (at most 1.5x)",
            vouched_x <= 1.5,
        ),
    ):
        print(f"  {label:<62} {'pass' if ok else 'MISS'}")


if __name__ == "__main__":
    main()
