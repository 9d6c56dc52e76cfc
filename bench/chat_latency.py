"""Chat latency: the time from a send to its arrival at every member of one room.

Starts a private redis-server and the app under gunicorn (2 gevent workers) on free
loopback ports, seats `--members` visitors in one room the way a browser does (a
display name with the lobby's CSRF token, then the room's gate), opens one room
websocket per member (websocket-client, one reader thread each), and lets the members
take turns sending at a steady `--rate` (each member stays far under the rate limit of
20 messages per 10 s). For every (message, receiving member) pair, the sender included,
it records the time from the send call to the frame's arrival, and checks each
member's ids for gaps, repeats and order. Prints percentiles in milliseconds.

    .venv/bin/python bench/chat_latency.py            # 50 members, 10 msg/s for 30 s
    .venv/bin/python bench/chat_latency.py --quick    # 50 members, 5 msg/s for 8 s

Client, servers and Redis share the machine: the figures include the client's own
threads (50 readers parsing JSON under one GIL), so they are an upper bound on what a
browser would see.
"""

from __future__ import annotations

import argparse
import contextlib
import http.cookiejar
import itertools
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import websocket
from servers import (
    HOST,
    OPEN_JOIN_LIMITS,
    answers,
    free_port,
    run_bounded,
    spawn,
    start_redis,
    stop,
    tree_cpu,
    wait_until,
)

ADMIN = "bench-admin-token-0123456789"
ROOM = "bench-chat"
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
RATE_LIMIT, RATE_WINDOW = 20, 10.0  # the server's per-sender limit
GOAL_CHAT = 1.5  # issue 14: p50 and p99 within 1.5 times the bare fan-out's


# -- servers -----------------------------------------------------------------------------


def start(
    stack: contextlib.ExitStack, workdir: Path, workers: int, app: str = "webapp:create_app()"
) -> tuple[str, list[int]]:
    """redis-server and gunicorn; returns the app's URL and both servers' pids. ``app``
    may be the bare fan-out (``baseline_app:create_app()``, from bench/)."""
    redis_port, redis_pid = start_redis(stack, workdir)

    port = free_port()
    env = {
        **os.environ,
        "REDIS_URL": f"redis://{HOST}:{redis_port}/0",
        "WEBAPP_ADMIN_TOKEN": ADMIN,
        "WEBAPP_SECRET_KEY": "bench-secret-key-0123456789",
        "WEBAPP_DATA_DIR": str(workdir),
        "WEBAPP_MAX_CONNECTIONS_PER_USER": "1000",
        **OPEN_JOIN_LIMITS,
        "WEB_WORKER_CLASS": "gevent",
        "WEB_CONCURRENCY": str(workers),
    }
    log = workdir / "gunicorn.log"
    argv = [
        sys.executable, "-m", "gunicorn", "-c", "python:webapp.web.gunicorn_conf",
        "--bind", f"{HOST}:{port}", "--pythonpath", str(Path(__file__).resolve().parent), app,
    ]  # fmt: skip
    proc = spawn(argv, log, env)
    stack.callback(stop, proc)
    url = f"http://{HOST}:{port}"
    ready = "/ping" if app.startswith("baseline_app") else "/api/rooms"
    wait_until(lambda: answers(f"{url}{ready}", timeout=2), proc, log)
    return url, [redis_pid, proc.pid]


# -- members -----------------------------------------------------------------------------


def admin(url: str, room: str, settings: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{url}/api/admin/rooms/{room}",
        data=json.dumps(settings).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()


def seated_cookie(url: str, room: str, name: str) -> str:
    """A visitor as a browser makes one: a display name, then the room's button."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{url}/", timeout=10) as reply:
        token = CSRF.search(reply.read().decode())
    if token is None:
        raise RuntimeError("the lobby page has no csrf-token")
    form = urllib.parse.urlencode({"name": name, "csrf_token": token.group(1)}).encode()
    opener.open(f"{url}/name", data=form, timeout=10).close()
    join = urllib.parse.urlencode({"csrf_token": token.group(1)}).encode()
    with opener.open(f"{url}/rooms/{room}/join", data=join, timeout=10) as reply:
        if "You are in" not in reply.read().decode():
            raise RuntimeError(f"{name} did not get a seat in {room}")
    return "; ".join(f"{c.name}={c.value}" for c in jar)


class Member:
    """One room socket; its reader thread stamps every message frame on arrival."""

    def __init__(self, url: str, room: str, cookie: str, path: str = "") -> None:
        ws_url = url.replace("http://", "ws://") + (path or f"/rooms/{room}/ws")
        header = [f"Cookie: {cookie}"] if cookie else []
        self.ws = websocket.create_connection(ws_url, header=header, origin=url, timeout=30)
        self.ws.settimeout(None)  # the reader waits as long as it takes; close() ends it
        self.arrivals: list[tuple[int, str, float]] = []  # (id, text, perf_counter)
        self.errors: list[dict[str, Any]] = []
        self.missed = 0
        self.joined = threading.Event()
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self) -> None:
        with contextlib.suppress(websocket.WebSocketException, OSError):
            while True:
                raw = self.ws.recv()
                now = time.perf_counter()
                if not raw:
                    return
                frame = json.loads(raw)
                kind = frame.get("type")
                if kind == "message":
                    self.arrivals.append((frame["id"], frame["text"], now))
                elif kind == "chat.history":
                    self.joined.set()
                elif kind == "chat.missed":
                    self.missed += frame["count"]
                elif kind == "error":
                    self.errors.append(frame)

    def send(self, text: str) -> None:
        self.ws.send(json.dumps({"type": "send", "text": text}))

    def close(self) -> None:
        # No waiting for the server's close frame: the reader thread owns the reads.
        with contextlib.suppress(websocket.WebSocketException, OSError):
            self.ws.send_close()
        self.ws.shutdown()


class BrowserMember:
    """One more member in headless Chromium: when each message reached the screen.

    A MutationObserver stamps each new message's row on the page's wall clock at the
    first animation frame after it was added (what a person could first see); the
    bench compares that with its own wall clock at the send (same machine, same clock).
    """

    OBSERVE = """() => {
      window.shown = {};
      new MutationObserver((changes) => {
        const rows = changes.flatMap((c) => [...c.addedNodes])
          .filter((n) => n.classList && n.classList.contains("message"));
        if (rows.length) requestAnimationFrame(() => {
          const now = Date.now();
          rows.forEach((r) => { window.shown[r.querySelector(".text").textContent] = now; });
        });
      }).observe(document.getElementById("messages"), {childList: true});
    }"""

    def __init__(self, stack: contextlib.ExitStack, url: str, room: str) -> None:
        from playwright.sync_api import sync_playwright

        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
        )
        stack.callback(browser.close)
        self.page = browser.new_page(viewport={"width": 1280, "height": 860})
        self.page.set_default_timeout(20_000)
        self.page.goto(f"{url}/rooms/{room}")
        self.page.get_by_label("Your display name").fill("browser")
        self.page.locator("#join").click()
        self.page.wait_for_selector("#connection[data-state=live]")
        self.page.evaluate(self.OBSERVE)

    def shown(self) -> dict[str, float]:
        stamps: dict[str, float] = self.page.evaluate("window.shown")
        return {text: ms / 1000 for text, ms in stamps.items()}


# -- the run -----------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(ms: list[float]) -> str:
    return (
        f"median {statistics.median(ms):.1f}  p90 {percentile(ms, 0.9):.1f}"
        f"  p99 {percentile(ms, 0.99):.1f}  max {max(ms):.1f}"
    )


def check_order(members: list[Member], ids: set[int]) -> tuple[int, int, int]:
    """Gaps (sent ids a member never got), repeats and ids that came after a larger one."""
    gaps = repeats = disorder = 0
    for member in members:
        got = [i for i, _, _ in member.arrivals]
        repeats += len(got) - len(set(got))
        disorder += sum(1 for a, b in itertools.pairwise(got) if b < a)
        gaps += len(ids - set(got))
    return gaps, repeats, disorder


class Result:
    """What one measured run saw."""

    def __init__(self, latencies: list[float], gaps: int, repeats: int, disorder: int) -> None:
        self.latencies = latencies
        self.gaps, self.repeats, self.disorder = gaps, repeats, disorder


def run(args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
    with contextlib.ExitStack() as inner:  # each run's servers stop before the next
        ours = run_app(args, inner)
    if args.bare:
        with contextlib.ExitStack() as inner:
            bare = run_bare(args, inner)
        goals(ours, bare)


def run_bare(args: argparse.Namespace, stack: contextlib.ExitStack) -> Result:
    """The same members and messages through the bare pub/sub fan-out."""
    workdir = Path(tempfile.mkdtemp(prefix="wr-chat-bare-"))
    stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    progress("bare fan-out: starting redis-server and gunicorn (baseline_app)")
    url, pids = start(stack, workdir, args.workers, "baseline_app:create_app()")
    with ThreadPoolExecutor(8) as pool:
        members = list(pool.map(lambda _: Member(url, "", "", "/bare/ws"), range(args.members)))
    for member in members:
        stack.callback(member.close)
    for member in members:
        if not member.joined.wait(15):
            raise RuntimeError("a bare socket got no greeting")
    return send_and_report(args, members, pids, None, "bare fan-out (Redis pub/sub, no storage)")


def goals(ours: Result, bare: Result) -> None:
    """Issue 14's chat goal, with pass or miss."""
    print("goals (issue 14): chat against the bare fan-out, same run")
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        a, b = percentile(ours.latencies, q), percentile(bare.latencies, q)
        verdict = "pass" if a <= GOAL_CHAT * b else "MISS"
        print(f"  {verdict}  {name} <= {GOAL_CHAT}x bare: {a / b:.2f} ({a:.1f} vs {b:.1f} ms)")
    broken = ours.gaps + ours.repeats + ours.disorder
    verdict = "pass" if broken == 0 else "MISS"
    print(
        f"  {verdict}  0 gaps, duplicates, reorderings: "
        f"{ours.gaps}, {ours.repeats}, {ours.disorder}"
    )


def run_app(args: argparse.Namespace, stack: contextlib.ExitStack) -> Result:
    workdir = Path(tempfile.mkdtemp(prefix="wr-chat-bench-"))
    stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    progress(f"starting redis-server and gunicorn ({args.workers} gevent workers)")
    url, pids = start(stack, workdir, args.workers)
    admin(url, ROOM, {"capacity": args.members + 10, "grace_seconds": 60,
                      "dropout_seconds": 3600, "session_seconds": 86400})  # fmt: skip
    progress(f"seating {args.members} members")
    with ThreadPoolExecutor(8) as pool:
        cookies = list(pool.map(lambda i: seated_cookie(url, ROOM, f"m{i:02d}"),
                                range(args.members)))  # fmt: skip
        members = list(pool.map(lambda c: Member(url, ROOM, c), cookies))
    for member in members:
        stack.callback(member.close)
    for member in members:
        if not member.joined.wait(15):
            raise RuntimeError("a member's socket got no chat.history")
    browser = None
    if args.browser:
        progress("one more member in headless Chromium")
        browser = BrowserMember(stack, url, ROOM)
    return send_and_report(args, members, pids, browser, "the app's room chat")


def send_and_report(
    args: argparse.Namespace,
    members: list[Member],
    pids: list[int],
    browser: BrowserMember | None,
    what: str,
) -> Result:
    load_before = os.getloadavg()
    count = round(args.rate * args.duration)
    per_sender = count / args.members * RATE_WINDOW / args.duration
    if per_sender >= RATE_LIMIT:
        raise RuntimeError(f"{per_sender:.1f} sends per member per 10 s is over the limit")
    progress(f"sending {count} messages at {args.rate:g}/s ({per_sender:.1f} per member per 10 s)")
    sent: dict[str, float] = {}
    wall: dict[str, float] = {}
    cpu_before = [tree_cpu(pid) for pid in pids]
    began = time.perf_counter()
    for k in range(args.warmup + count):
        due = began + k / args.rate
        time.sleep(max(0.0, due - time.perf_counter()))
        text = f"{'w' if k < args.warmup else 'm'}{k} from m{k % args.members:02d}"
        wall[text] = time.time()
        sent[text] = time.perf_counter()
        members[k % args.members].send(text)
    total = len(sent) * len(members)
    deadline = time.perf_counter() + args.drain
    while sum(len(m.arrivals) for m in members) < total and time.perf_counter() < deadline:
        time.sleep(0.05)
    if browser is not None:
        while len(browser.shown()) < len(sent) and time.perf_counter() < deadline:
            time.sleep(0.1)
    elapsed = time.perf_counter() - began
    cpu = [(tree_cpu(pid) - before) for pid, before in zip(pids, cpu_before, strict=True)]
    load_after = os.getloadavg()

    latencies = [
        (arrived - sent[text]) * 1000
        for member in members
        for _, text, arrived in member.arrivals
        if text in sent and not text.startswith("w")
    ]
    ids = {i for m in members for i, _, _ in m.arrivals}
    if len(ids) != len(sent):
        print(f"  {len(sent) - len(ids)} messages reached nobody")
    gaps, repeats, disorder = check_order(members, ids)
    expected = count * len(members)
    errors = sum(len(m.errors) for m in members)
    print()
    print(f"chat latency, send -> receipt ({what}): {len(members)} members in one room, "
          f"{args.workers} gevent workers, {count} messages at {args.rate:g}/s "
          f"(+{args.warmup} warm-up, not measured)")  # fmt: skip
    if latencies:
        print(f"  ms: {summary(latencies)}")
    print(f"  deliveries measured: {len(latencies)} of {expected} expected")
    print(f"  gaps {gaps}, duplicates {repeats}, out of order {disorder}, "
          f"missed notices {sum(m.missed for m in members)}, send errors {errors}")  # fmt: skip
    if browser is not None:
        shown = browser.shown()
        display = [(shown[t] - wall[t]) * 1000 for t in shown if t in wall and t[0] == "m"]
        figures = summary(display) if display else "-"
        print(f"  send -> on screen in one Chromium page (next frame after insertion), "
              f"{len(display)} of {count} messages, ms: {figures}")  # fmt: skip
    print(f"  CPU over the sending ({elapsed:.1f} s): redis-server {cpu[0]:.1f} s, "
          f"gunicorn {cpu[1]:.1f} s; {os.cpu_count()} CPUs")  # fmt: skip
    print(f"  load average (1 min): {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if errors:
        print(f"  first send error: {next(e for m in members for e in m.errors)}")
    return Result(latencies, gaps, repeats, disorder)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 msg/s for 8 s")
    parser.add_argument("--members", type=int, default=50)
    parser.add_argument("--rate", type=float, help="messages per second (10; --quick 5)")
    parser.add_argument("--duration", type=float, help="seconds of sending (30; --quick 8)")
    parser.add_argument("--warmup", type=int, default=10, help="messages not measured")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--browser", action="store_true", help="also time send -> screen in one Chromium page"
    )
    parser.add_argument("--drain", type=float, default=15.0, help="seconds to wait for stragglers")
    parser.add_argument(
        "--bare", action="store_true", help="then the same through a bare pub/sub fan-out"
    )
    args = parser.parse_args(argv)
    args.rate = args.rate or (5.0 if args.quick else 10.0)
    args.duration = args.duration or (8.0 if args.quick else 30.0)
    return args


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    budget = (120 + args.duration + args.warmup / args.rate + args.drain) * (2 if args.bare else 1)
    return run_bounded(budget, lambda stack: run(args, stack))


if __name__ == "__main__":
    sys.exit(main())
