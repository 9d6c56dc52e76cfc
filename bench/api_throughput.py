"""Join and check-in throughput of the JSON API, next to a bare Flask endpoint.

Starts a private redis-server and two gunicorn servers on free loopback ports: the real
app (``webapp:create_app()``) and ``bench/baseline_app.py`` (one Redis ``INCR`` per
request), both with the same gunicorn settings and the same Redis. Client processes
then drive each operation in turn over keep-alive connections for a fixed time, several
rounds over, and the table gives medians across rounds and each operation's throughput
as a ratio to the baseline's in the same round. See bench/README.md for how to read it.

    .venv/bin/python bench/api_throughput.py [--quick]

Loopback only; every run is bounded in time and stops everything it started, also on
Ctrl-C, SIGTERM or an error.
"""

from __future__ import annotations

import argparse
import array
import contextlib
import http.client
import json
import multiprocessing
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import redis
from servers import (
    HOST,
    free_port,
    run_bounded,
    spawn,
    start_redis,
    stop,
    tree_cpu,
    wait_until,
)

BENCH_DIR = Path(__file__).resolve().parent
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
PAGE_POLL = re.compile(r'hx-get="(/rooms/[^"]+/line\?[^"]+)"')
SHAPE = re.compile(r'data-shape="([^"]+)"')
FORM = "application/x-www-form-urlencoded"
ADMIN_TOKEN = "bench-admin-token"
ADDRESSES = 1024  # client addresses per connection for joins (see ``addresses``)
REQUEST_TIMEOUT = 10.0  # seconds; a stuck server fails the round instead of hanging it
BIG = 1_000_000  # the largest capacity a room may have: every join is admitted
LONG = {"dropout_seconds": 3600, "session_seconds": 86400}  # nobody lapses mid-bench


@dataclass(frozen=True)
class Operation:
    """One measured request kind."""

    label: str
    server: str  # "baseline" or "app"
    method: str
    path: str  # may hold {token}: each client thread cycles through its own tokens
    pool: str = ""  # the name of the token pool for {token}
    note: str = ""
    versus: str = ""  # the label of the baseline its ratios are to ('' = the first)


@dataclass(frozen=True)
class Room:
    name: str
    settings: dict[str, Any]
    held: bool  # one seat taken up front, so every later join waits in line


ROOMS = {
    "join-admitted": Room("bench-join-admitted", {"capacity": BIG, **LONG}, held=False),
    "join-waiting": Room("bench-join-waiting", {"capacity": 1, **LONG}, held=True),
    "checkin-waiting": Room("bench-checkin-waiting", {"capacity": 1, **LONG}, held=True),
    "checkin-admitted": Room("bench-checkin-admitted", {"capacity": BIG, **LONG}, held=False),
    "page-poll": Room("bench-page-poll", {"capacity": 1, **LONG}, held=True),
}
# Rooms whose contents grow with every join: recreated before each round, so every
# round starts alike.
FRESH_EACH_ROUND = ("join-admitted", "join-waiting")

BARE_JOIN = "bare join (EVALSHA)"
BARE_CHECKIN = "bare check-in (EVALSHA)"
OPERATIONS = [
    Operation("baseline (1 INCR)", "baseline", "GET", "/ping", note="bare Flask + one INCR"),
    Operation(
        BARE_JOIN,
        "baseline",
        "POST",
        "/line",
        note="bare Flask + one EVALSHA (ZADD NX, ZRANK, ZCARD) of a new token",
    ),
    Operation(
        BARE_CHECKIN,
        "baseline",
        "GET",
        "/line/{token}",
        pool="bare-line",
        note="bare Flask + the same EVALSHA of a token already in line",
    ),
    Operation(
        "join, admitted",
        "app",
        "POST",
        f"/api/rooms/{ROOMS['join-admitted'].name}/join",
        note=f"capacity {BIG}: every join gets a seat",
        versus=BARE_JOIN,
    ),
    Operation(
        "join, to the line",
        "app",
        "POST",
        f"/api/rooms/{ROOMS['join-waiting'].name}/join",
        note="capacity 1, seat taken: every join waits in line",
        versus=BARE_JOIN,
    ),
    Operation(
        "check-in, waiting",
        "app",
        "GET",
        f"/api/rooms/{ROOMS['checkin-waiting'].name}/position/{{token}}",
        pool="checkin-waiting",
        note="GET position of tickets waiting in line",
        versus=BARE_CHECKIN,
    ),
    Operation(
        "check-in, admitted",
        "app",
        "GET",
        f"/api/rooms/{ROOMS['checkin-admitted'].name}/position/{{token}}",
        pool="checkin-admitted",
        note="GET position of tickets holding a seat",
        versus=BARE_CHECKIN,
    ),
]
PAGE_POLL_LABEL = "waiting page's poll"
PARTIAL_POLL_LABEL = "page's poll, partial"
OPERATIONS += [
    Operation(
        PAGE_POLL_LABEL,
        "app",
        "GET",
        "{token}",
        pool="page-poll",
        note="a browser's waiting page polls (its cookie, HX-Request, the shape its page "
        "shows): the figures alone, as JSON",
        versus=BARE_CHECKIN,
    ),
    Operation(
        PARTIAL_POLL_LABEL,
        "app",
        "GET",
        "{token}",
        pool="page-poll-partial",
        note="the same poll without the shape (htmx alone, no waiting.js): the whole "
        "partial template",
        versus=BARE_CHECKIN,
    ),
]
BY_LABEL = {op.label: op for op in OPERATIONS}
POLL_LABELS = (
    OPERATIONS[0].label,
    BARE_CHECKIN,
    "check-in, waiting",
    PAGE_POLL_LABEL,
    PARTIAL_POLL_LABEL,
)
GOAL32_POLL = 1.0  # issue 32: the waiting page's poll at least the bare endpoint's
JOINS = ("join, admitted", "join, to the line")
JOIN_LABELS = (OPERATIONS[0].label, BARE_JOIN, *JOINS)  # --joins: these alone
GOAL32_JOIN = 0.9  # issue 32: a join (limits, join, prediction: one round trip) 0.9x bare
GOAL_RATIO = 0.85  # issue 14: joins and check-ins at least 0.85 of the bare endpoint
GOAL_PACED = 1.2  # paced check-in p50 and p99 within 1.2 times the bare endpoint's
GOAL26_CHECKIN = 1.3  # issue 26: check-ins at 1.3 times the bare endpoint's throughput
GOAL26_JOIN = 0.9  # ... joins at 0.9 of it
GOAL26_PACED = 1.0  # ... paced check-in p50 and p99 at most the bare endpoint's
GOAL_REDIS_US = 100.0  # at most about 100 us of Redis CPU per join or check-in


# -- the client side: runs in separate processes ---------------------------------------


@dataclass
class Window:
    """What one client (process or thread) saw in one timed window."""

    done: int = 0
    errors: int = 0
    latencies: array.array[float] = field(default_factory=lambda: array.array("d"))
    first_error: str = ""

    def add(self, other: Window) -> None:
        self.done += other.done
        self.errors += other.errors
        self.latencies.extend(other.latencies)
        self.first_error = self.first_error or other.first_error


def request(conn: http.client.HTTPConnection, method: str, path: str) -> tuple[int, bytes]:
    conn.request(method, path)
    response = conn.getresponse()
    return response.status, response.read()


class KeepAlive:
    """A minimal HTTP/1.1 keep-alive client for the timed requests.

    http.client parses every header block with the email package: on a 2-core machine
    that took about 5 times the client CPU per request of this, CPU the servers under
    test then lack. It handles what gunicorn sends back to Flask: Content-Length bodies.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.reader: Any = None

    def message(self, method: str, path: str, address: str = "") -> bytes:
        """A request; ``address``: the client it comes from, as the proxy in front says.
        A path may carry header lines of its own after a NUL (a browser's poll: its
        cookie, what its script sends)."""
        path, _, headers = path.partition("\0")
        forwarded = f"X-Forwarded-For: {address}\r\n" if address else ""
        return (
            f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\n{forwarded}{headers}"
            "Content-Length: 0\r\n\r\n"
        ).encode()

    def connect(self) -> None:
        self.sock = socket.create_connection((HOST, self.port), timeout=REQUEST_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def close(self) -> None:
        if self.sock is not None:
            self.reader.close()
            self.sock.close()
        self.sock = self.reader = None

    def send(self, message: bytes) -> tuple[int, bytes]:
        """Sends one prepared request; returns the status and body of the reply."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        self.sock.sendall(message)
        status_line = self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split(b" ", 2)[1])
        length, close = 0, False
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection":
                close = value.strip().lower() == b"close"
            elif name == b"transfer-encoding":
                raise http.client.HTTPException("chunked replies are not supported")
        body = self.reader.read(length)
        if close:
            self.close()
        return status, body


def drive(
    port: int, method: str, paths: list[str], start_at: float, duration: float, every: float = 0
) -> Window:
    """Sends requests back to back on one keep-alive connection during the window, or
    with ``every`` > 0 one every ``every`` seconds (paced: open loop on a schedule, each
    latency counted from its scheduled time, so a slow reply also counts against the
    requests it held up)."""
    out = Window()
    client = KeepAlive(port)
    messages = [client.message(method, path) for path in paths]
    if method == "POST":  # joins, each from an address of its own (see ADDRESSES)
        messages = [client.message(method, paths[0], address) for address in addresses()]
    with contextlib.suppress(OSError):
        client.connect()  # before the window opens: connection set-up is not timed
    end = start_at + duration
    time.sleep(max(start_at - time.monotonic(), 0))
    i = 0
    clock = time.monotonic
    if every:  # spread the connections' schedules over one interval
        start_at += every * (hash((port, tuple(paths[:1]))) % 1000) / 1000
    while True:
        began = clock()
        if every:
            scheduled = start_at + i * every
            if scheduled >= end:
                break
            if scheduled > began:
                time.sleep(scheduled - began)
            began = scheduled
        if began >= end:
            break
        try:
            status, body = client.send(messages[i % len(messages)])
            ok = status == 200
            if not ok and not out.first_error:
                out.first_error = f"HTTP {status}: {body[:200]!r}"
        except (OSError, ValueError, IndexError, http.client.HTTPException) as error:
            ok = False
            out.first_error = out.first_error or f"{type(error).__name__}: {error}"
            client.close()
        finished = clock()
        i += 1
        if finished > end:
            break  # finished after the window closed: not counted
        if ok:
            out.done += 1
            out.latencies.append(finished - began)
        else:
            out.errors += 1
    client.close()
    return out


def in_threads(work: Callable[..., Any], arguments: list[tuple[Any, ...]]) -> list[Any]:
    """Runs ``work(*args)`` for each args in its own thread; returns the results in order."""
    results: list[Any] = [None] * len(arguments)
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = work(*arguments[index])
        except BaseException as error:  # raised again in the calling thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(arguments))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return results


def addresses(count: int = ADDRESSES) -> list[str]:
    """``count`` client addresses drawn at random from 10.0.0.0/8: the joins of a crowd,
    each from its own address, so the limits per address and per network count every
    join at their defaults and never refuse one (a 2,000 joins/s bench spreads over
    ADDRESSES x 48 connections; an address comes back after ADDRESSES of its connection's
    joins, minutes later)."""
    return [f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"
            for _ in range(count)]  # fmt: skip


def fill(port: int, room: str, count: int) -> list[str]:
    """Joins ``count`` times on one connection; returns the tokens."""
    client = KeepAlive(port)
    path = f"/api/rooms/{room}/join"
    tokens = []
    for address in addresses(count):
        status, body = client.send(client.message("POST", path, address))
        if status != 200:
            raise RuntimeError(f"join {room} during set-up: HTTP {status} {body[:200]!r}")
        tokens.append(json.loads(body)["token"])
    client.close()
    return tokens


class Browser:
    """A browser for the set-up: one connection, its cookies, its own address."""

    def __init__(self, port: int, address: str) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT)
        self.address = address
        self.jar: dict[str, str] = {}

    def cookie(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.jar.items())

    def visit(self, method: str, path: str, body: str | None = None, **more: str) -> str:
        headers = {"X-Forwarded-For": self.address, "Cookie": self.cookie(), **more}
        self.conn.request(method, path, body, headers)
        response = self.conn.getresponse()
        for line in response.msg.get_all("Set-Cookie") or []:
            name, _, value = line.split(";", 1)[0].partition("=")
            self.jar[name.strip()] = value.strip()
        if response.status >= 400:
            raise RuntimeError(f"{method} {path} during set-up: HTTP {response.status}")
        return response.read().decode()


def browse(port: int, room: str, count: int, figures: bool) -> list[str]:
    """``count`` browsers join ``room``'s line through its pages, each from an address of
    its own: the lobby (its CSRF token, the session cookie), the join's form, the waiting
    page. Returns each one's poll as waiting.js sends it while the page's shape holds
    (``figures``; else as htmx alone would, for the whole partial): the path, then after
    a NUL its header lines (the cookie, ``HX-Request``, the shape)."""
    polls = []
    for address in addresses(count):
        browser = Browser(port, address)
        token = CSRF.search(browser.visit("GET", "/"))
        assert token, "no CSRF token on the lobby"
        form = urllib.parse.urlencode({"csrf_token": token.group(1), "name": "Bench"})
        browser.visit("POST", f"/rooms/{room}/join", form, **{"Content-Type": FORM})
        page = browser.visit("GET", f"/rooms/{room}")
        path, shape = PAGE_POLL.search(page), SHAPE.search(page)
        assert path, "no poll on the waiting page"
        headers = f"Cookie: {browser.cookie()}\r\nHX-Request: true\r\n"
        if figures:
            assert shape, "no shape on the waiting page"
            headers += f"X-Line-Shape: {shape.group(1)}\r\n"
        polls.append(f"{path.group(1).replace('&amp;', '&')}\0{headers}")
        browser.conn.close()
    client = KeepAlive(port)  # the answer the bench measures: the figures, or the partial
    status, body = client.send(client.message("GET", polls[0]))
    client.close()
    if status != 200 or body.startswith(b"{") != figures:
        raise RuntimeError(f"a poll during set-up: HTTP {status} {body[:200]!r}")
    return polls


def client_main(pipe: Connection, threads: int) -> None:
    """A load-generating process: obeys commands from the bench until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the bench process handles Ctrl-C
    pools: dict[str, list[list[str]]] = {}  # pool -> each thread's tokens
    while True:
        try:
            command, *args = pipe.recv()
        except (EOFError, OSError):
            return  # the bench is gone
        if command == "stop":
            return
        try:
            reply: tuple[str, Any] = ("ok", obey(command, args, pools, threads))
        except Exception as error:  # reported to the bench rather than lost
            reply = ("error", f"{type(error).__name__}: {error}")
        try:
            pipe.send(reply)
        except OSError:
            return  # the bench is gone


def obey(command: str, args: list[Any], pools: dict[str, list[list[str]]], threads: int) -> Any:
    if command == "fill":
        pool, port, room, per_thread = args
        pools[pool] = in_threads(fill, [(port, room, per_thread)] * threads)
        return None
    if command == "browse":
        pool, port, room, per_thread, figures = args
        pools[pool] = in_threads(browse, [(port, room, per_thread, figures)] * threads)
        return None
    if command == "names":  # tokens the bare line learns at their first check-in
        pool, per_thread = args
        pools[pool] = [
            [f"bare-{os.getpid()}-{n}-{i}" for i in range(per_thread)] for n in range(threads)
        ]
        return None
    if command == "run":
        port, method, path, pool, start_at, duration, every = args
        own = pools[pool] if pool else [[""]] * threads
        paths = [[path.format(token=token) for token in tokens] for tokens in own]
        total = Window()
        jobs = [(port, method, p, start_at, duration, every) for p in paths]
        for part in in_threads(drive, jobs):
            total.add(part)
        return total
    raise ValueError(f"unknown command {command!r}")


# -- the servers -------------------------------------------------------------------------


def answers(port: int, path: str) -> bool:
    try:
        conn = http.client.HTTPConnection(HOST, port, timeout=2)
        status, _ = request(conn, "GET", path)
        conn.close()
        return status < 500
    except (OSError, http.client.HTTPException):
        return False


def start_gunicorn(
    stack: contextlib.ExitStack, workdir: Path, name: str, app: str, env: dict[str, str]
) -> tuple[int, int]:
    """Starts a gunicorn server; returns its port and its master's pid."""
    port = free_port()
    log = workdir / f"{name}.log"
    argv = [
        sys.executable, "-m", "gunicorn",
        "-c", "python:webapp.web.gunicorn_conf",
        "--bind", f"{HOST}:{port}",
        "--pythonpath", str(BENCH_DIR),
        app,
    ]  # fmt: skip
    proc = spawn(argv, log, env)
    stack.callback(stop, proc)
    path = "/ping" if name == "baseline" else "/api/rooms"
    wait_until(lambda: answers(port, path), proc, log)
    return port, proc.pid


# -- the bench ---------------------------------------------------------------------------


@dataclass
class Sample:
    rps: float
    p50: float
    p99: float
    errors: int
    server_cpu: float  # CPU seconds of the gunicorn server (master and workers) per request
    redis_commands: float  # per request, counting those a script runs
    redis_cpu: float  # redis-server CPU seconds per request


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


class Clients:
    """The load-generating processes."""

    def __init__(self, stack: contextlib.ExitStack, processes: int, threads: int) -> None:
        context = multiprocessing.get_context("spawn")  # no inherited threads or sockets
        self.pipes: list[Connection] = []
        self.procs = []
        for _ in range(processes):
            ours, theirs = context.Pipe()
            proc = context.Process(target=client_main, args=(theirs, threads), daemon=True)
            proc.start()
            stack.callback(self._end, proc)
            self.pipes.append(ours)
            self.procs.append(proc)

    @staticmethod
    def _end(proc: Any) -> None:
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)

    def ask(self, *command: Any, timeout: float) -> list[Any]:
        for pipe in self.pipes:
            pipe.send(command)
        replies = []
        for pipe, proc in zip(self.pipes, self.procs, strict=True):
            if not pipe.poll(timeout):
                raise RuntimeError(f"a client process did not answer {command[0]!r} in time")
            status, value = pipe.recv()
            if status != "ok":
                raise RuntimeError(f"client process {proc.pid}: {value}")
            replies.append(value)
        return replies


class Bench:
    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
        self.args = args
        self.workdir = Path(tempfile.mkdtemp(prefix="wr-bench-api-"))
        stack.callback(shutil.rmtree, self.workdir, True)
        redis_port, _ = start_redis(stack, self.workdir)
        self.redis = redis.Redis(host=HOST, port=redis_port)
        stack.callback(self.redis.close)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBAPP_", "WEB_"))}
        env.update(
            REDIS_URL=f"redis://{HOST}:{redis_port}/0",
            WEBAPP_ADMIN_TOKEN=ADMIN_TOKEN,
            WEBAPP_SECRET_KEY="bench-secret-key",
            WEBAPP_DATA_DIR=str(self.workdir / "data"),
            WEB_WORKER_CLASS=args.worker_class,
            WEB_CONCURRENCY=str(args.workers),
            WEB_THREADS=str(args.server_threads),
            # the join limits at their defaults (issue 32), every join from an address of
            # its own, as the proxy in front (the bench's clients) says
            WEBAPP_PROXY_COUNT="1",
            WEBAPP_TRUSTED_PROXIES=HOST,
        )
        self.ports: dict[str, int] = {}
        self.pids: dict[str, int] = {}
        for server, app in (
            ("app", "webapp:create_app()"),
            ("baseline", "baseline_app:create_app()"),
        ):
            self.ports[server], self.pids[server] = start_gunicorn(
                stack, self.workdir, server, app, env
            )
        self.clients = Clients(stack, args.clients, args.threads)
        self.longest_line = 0
        alone = JOIN_LABELS if args.joins else POLL_LABELS if args.polls else None
        self.ops = [op for op in OPERATIONS if alone is None or op.label in alone]

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        conn = http.client.HTTPConnection(HOST, self.ports["app"], timeout=REQUEST_TIMEOUT)
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        reply = json.loads(response.read() or b"null")
        conn.close()
        if response.status >= 400 and not (method == "DELETE" and response.status == 404):
            raise RuntimeError(f"{method} {path}: HTTP {response.status} {reply}")
        return reply

    def make_room(self, room: Room) -> None:
        self.admin("DELETE", f"/api/admin/rooms/{room.name}")
        self.admin("PUT", f"/api/admin/rooms/{room.name}", room.settings)
        if room.held:
            self.admin("POST", f"/api/rooms/{room.name}/join")

    def set_up(self) -> None:
        for room in ROOMS.values():
            self.make_room(room)
        if self.args.joins:
            return  # no check-ins measured: no pools to fill
        for pool in ("checkin-waiting", "checkin-admitted"):
            name = ROOMS[pool].name
            self.clients.ask("fill", pool, self.ports["app"], name, self.args.fill, timeout=120)
        browsers = max(self.args.fill // 25, 1)  # each makes three requests to join
        name = ROOMS["page-poll"].name
        for pool, figures in (("page-poll", True), ("page-poll-partial", False)):
            self.clients.ask(
                "browse", pool, self.ports["app"], name, browsers, figures, timeout=120
            )
        self.clients.ask("names", "bare-line", self.args.fill, timeout=30)

    def redis_usage(self) -> tuple[int, float]:
        """Commands the Redis server ran so far (script calls included), and its CPU time."""
        info = self.redis.info("all")
        return info["total_commands_processed"], info["used_cpu_user"] + info["used_cpu_sys"]

    def window(self, op: Operation, duration: float, rate: float = 0) -> Sample:
        """One timed window of ``op``: closed loop, or ``rate`` requests per second in
        all (paced)."""
        every = self.args.clients * self.args.threads / rate if rate else 0
        start_at = time.monotonic() + 0.3  # time for every client to connect
        port = self.ports[op.server]
        commands, cpu = self.redis_usage()
        server_cpu = tree_cpu(self.pids[op.server])
        parts = self.clients.ask(
            "run", port, op.method, op.path, op.pool, start_at, duration, every,
            timeout=duration + 30,
        )  # fmt: skip
        commands_after, cpu_after = self.redis_usage()
        server_cpu = tree_cpu(self.pids[op.server]) - server_cpu
        total = Window()
        for part in parts:
            total.add(part)
        if total.errors and not total.done:
            raise RuntimeError(f"{op.label}: every request failed; first: {total.first_error}")
        if total.errors:
            progress(f"! {op.label}: {total.errors} errors; first: {total.first_error}")
        latencies = sorted(total.latencies)
        handled = max(total.done, 1)
        return Sample(
            rps=total.done / duration,
            p50=percentile(latencies, 0.5),
            p99=percentile(latencies, 0.99),
            errors=total.errors,
            server_cpu=server_cpu / handled,
            redis_commands=(commands_after - commands) / handled,
            redis_cpu=(cpu_after - cpu) / handled,
        )

    def run(self) -> dict[str, list[Sample]]:
        began = time.monotonic()
        self.set_up()
        for op in self.ops:  # warm-up: imports, script loading, connection pools
            self.window(op, self.args.warmup)
        progress(f"rooms filled and warmed up in {time.monotonic() - began:.1f} s")
        results: dict[str, list[Sample]] = {op.label: [] for op in self.ops}
        for round_ in range(self.args.repeats):
            for key in FRESH_EACH_ROUND:
                self.make_room(ROOMS[key])
            # Rotated each round, so no operation always runs first or after the same one.
            shift = round_ % len(self.ops)
            for op in self.ops[shift:] + self.ops[:shift]:
                results[op.label].append(self.window(op, self.args.duration))
            line = self.admin("GET", f"/api/rooms/{ROOMS['join-waiting'].name}/qsize")
            self.longest_line = max(self.longest_line, line["len"])
            progress(f"round {round_ + 1}/{self.args.repeats} done")
        return results

    def paced(self, results: dict[str, list[Sample]]) -> tuple[float, dict[str, list[Sample]]]:
        """Check-ins at half the bare check-in's saturation rate, interleaved with the
        bare check-in at the same rate: (the rate, samples per operation)."""
        rate = statistics.median(s.rps for s in results[BARE_CHECKIN]) * self.args.pace
        paced: dict[str, list[Sample]] = {BARE_CHECKIN: [], "check-in, waiting": []}
        for round_ in range(self.args.repeats):
            order = list(paced) if round_ % 2 == 0 else list(reversed(paced))
            for label in order:
                paced[label].append(self.window(BY_LABEL[label], self.args.duration, rate))
        progress(f"paced check-ins at {rate:.0f}/s done")
        return rate, paced


def median(values: Iterator[float]) -> float:
    return statistics.median(values)


def report(args: argparse.Namespace, bench: Bench, results: dict[str, list[Sample]]) -> None:
    connections = args.clients * args.threads
    print()
    print("API throughput next to bare Flask endpoints doing one Redis call")
    threads = f" x {args.server_threads} threads" if args.worker_class == "gthread" else ""
    print(
        f"gunicorn {args.worker_class}, {args.workers} workers{threads} per server; "
        f"redis-server on loopback TCP, no persistence; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"load: {connections} keep-alive connections ({args.clients} processes x "
        f"{args.threads} threads), closed loop; {args.repeats} rounds x {args.duration:g} s "
        "per operation, operations interleaved; figures are medians over rounds"
    )
    print()
    print(
        f"{'operation':<24} {'req/s':>6} {'spread':>6} {'rps/base':>8} {'p50 ms':>7} "
        f"{'p99 ms':>7} {'web us/req':>10} {'cpu/base':>8} {'redis cmd/req':>13} "
        f"{'redis us/req':>12} {'errors':>6}"
    )
    for op in bench.ops:
        samples = results[op.label]
        base = results[op.versus or OPERATIONS[0].label]
        pairs = list(zip(samples, base, strict=True))
        rps = median(s.rps for s in samples)
        rates = [s.rps for s in samples]
        spread = f"±{(max(rates) - min(rates)) / 2 / rps:.0%}" if rps else "-"
        cpu_ratio = (
            median(s.server_cpu / b.server_cpu for s, b in pairs)
            if all(b.server_cpu for b in base)
            else float("nan")
        )
        print(
            f"{op.label:<24} {rps:>6.0f} {spread:>6} "
            f"{median(s.rps / b.rps for s, b in pairs):>8.2f} "
            f"{median(s.p50 for s in samples) * 1e3:>7.2f} "
            f"{median(s.p99 for s in samples) * 1e3:>7.2f} "
            f"{median(s.server_cpu for s in samples) * 1e6:>10.0f} {cpu_ratio:>8.2f} "
            f"{median(s.redis_commands for s in samples):>13.1f} "
            f"{median(s.redis_cpu for s in samples) * 1e6:>12.0f} "
            f"{sum(s.errors for s in samples):>6}"
        )
    print()
    for op in bench.ops:
        versus = f" (ratios to {op.versus})" if op.versus else ""
        path = op.path.replace("{token}", "<token>")
        print(f"  {op.label:<24} {op.method} {path}: {op.note}{versus}")
    print(
        "rps/base and cpu/base: medians of per-round ratios to the operation's baseline "
        "(the INCR one unless named); spread: half the range of req/s over rounds; web "
        "us/req: CPU of the gunicorn master and workers per request; redis figures count "
        "every command, those inside Lua scripts too"
    )
    print(
        f"check-ins cycle through {connections * args.fill} tickets per room; the join rooms "
        f"are recreated each round (longest line reached: {bench.longest_line})"
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at the end: {load} (other work on this machine skews absolute figures)")


def goals(results: dict[str, list[Sample]], paced: tuple[float, dict[str, list[Sample]]]) -> None:
    """Issue 14's goals that this bench measures: figure and pass or miss."""

    def ratio(label: str) -> float:
        base = results[BY_LABEL[label].versus]
        return median(s.rps / b.rps for s, b in zip(results[label], base, strict=True))

    rows: list[tuple[str, str, bool]] = []
    for label in ("join, admitted", "join, to the line", "check-in, waiting", "check-in, admitted"):
        r = ratio(label)
        versus = BY_LABEL[label].versus
        rows.append((f"{label}: >= {GOAL_RATIO} of {versus}", f"{r:.2f}", r >= GOAL_RATIO))
    rate, samples = paced
    bare, ours = samples[BARE_CHECKIN], samples["check-in, waiting"]
    for name in ("p50", "p99"):
        mine = median(getattr(s, name) for s in ours)
        theirs = median(getattr(s, name) for s in bare)
        r = mine / theirs if theirs else float("inf")
        figure = f"{r:.2f} ({mine * 1e3:.2f} ms vs {theirs * 1e3:.2f} ms)"
        rows.append(
            (
                f"check-in paced at {rate:.0f}/s: {name} <= {GOAL_PACED}x bare",
                figure,
                r <= GOAL_PACED,
            )
        )
    for label in ("join, admitted", "join, to the line", "check-in, waiting", "check-in, admitted"):
        us = median(s.redis_cpu for s in results[label]) * 1e6
        rows.append(
            (f"{label}: Redis CPU <= {GOAL_REDIS_US:.0f} us", f"{us:.0f} us", us <= GOAL_REDIS_US)
        )
    share = max(
        median(s.redis_cpu * s.rps for s in results[label])
        for label in ("join, to the line", "check-in, waiting")
    )
    rows.append(
        ("Redis below 15% of one core at the app's saturation", f"{share:.0%}", share < 0.15)
    )
    print()
    print("goals (issue 14)")
    for goal, figure, passed in rows:
        print(f"  {'pass' if passed else 'MISS'}  {goal:<58} {figure}")
    print("goals (issue 26: the lean check-in path)")
    for goal, figure, passed in lean_goals(ratio, samples):
        print(f"  {'pass' if passed else 'MISS'}  {goal:<58} {figure}")
    for label, runs in samples.items():
        p50 = median(s.p50 for s in runs) * 1e3
        p99 = median(s.p99 for s in runs) * 1e3
        print(
            f"  paced {label}: served {median(s.rps for s in runs):.0f}/s, p50 {p50:.2f} ms, "
            f"p99 {p99:.2f} ms, errors {sum(s.errors for s in runs)}"
        )


def join_goals(results: dict[str, list[Sample]]) -> None:
    """Issue 32's: joins at 0.9 of the bare endpoint, limits on at their defaults."""
    print("goals (issue 32: one round trip per join; limits at their defaults, counted)")
    for label in JOINS:
        base = results[BY_LABEL[label].versus]
        r = median(s.rps / b.rps for s, b in zip(results[label], base, strict=True))
        goal = f"{label}: >= {GOAL32_JOIN} of {BY_LABEL[label].versus}"
        print(f"  {'pass' if r >= GOAL32_JOIN else 'MISS'}  {goal:<58} {r:.2f}")


def poll_goals(results: dict[str, list[Sample]]) -> None:
    """Issue 32's: the waiting page's poll serves at least as many as the bare endpoint."""
    print("goals (issue 32: the waiting page's poll, its figures alone)")
    base = results[BARE_CHECKIN]
    r = median(s.rps / b.rps for s, b in zip(results[PAGE_POLL_LABEL], base, strict=True))
    goal = f"{PAGE_POLL_LABEL}: >= {GOAL32_POLL} of {BARE_CHECKIN}"
    print(f"  {'pass' if r >= GOAL32_POLL else 'MISS'}  {goal:<58} {r:.2f}")
    checks = results["check-in, waiting"]
    r = median(
        s.server_cpu / c.server_cpu for s, c in zip(results[PAGE_POLL_LABEL], checks, strict=True)
    )
    print(f"        its web CPU per request / the API check-in's: {r:.2f}")


def lean_goals(
    ratio: Callable[[str], float], samples: dict[str, list[Sample]]
) -> list[tuple[str, str, bool]]:
    """Issue 26's goals: check-ins at 1.3 times the bare endpoint's throughput, paced
    p50 and p99 at most the bare endpoint's, joins at 0.9 of it."""
    rows = []
    for label, goal in (("check-in, waiting", GOAL26_CHECKIN), ("join, to the line", GOAL26_JOIN)):
        r = ratio(label)
        rows.append((f"{label}: >= {goal} of {BY_LABEL[label].versus}", f"{r:.2f}", r >= goal))
    bare, ours = samples[BARE_CHECKIN], samples["check-in, waiting"]
    for name in ("p50", "p99"):
        mine = median(getattr(s, name) for s in ours)
        theirs = median(getattr(s, name) for s in bare)
        r = mine / theirs if theirs else float("inf")
        rows.append((f"check-in paced: {name} <= {GOAL26_PACED}x bare", f"{r:.2f}",
                     r <= GOAL26_PACED))  # fmt: skip
    return rows


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 1 s: a smoke run")
    parser.add_argument("--repeats", type=int, help="rounds (default 5; quick 3)")
    parser.add_argument("--duration", type=float, help="seconds per operation per round")
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument(
        "--threads", type=int, default=12, help="connections per client (48 in all: hey's 50)"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per server")
    parser.add_argument("--server-threads", type=int, default=32, help="gthread: per worker")
    parser.add_argument(
        "--worker-class", default="gevent", help="gunicorn worker class (the Procfile's: gevent)"
    )
    parser.add_argument(
        "--pace", type=float, default=0.5, help="paced check-ins: this share of the bare rate"
    )
    parser.add_argument("--fill", type=int, help="tickets per connection for check-ins")
    parser.add_argument(
        "--joins", action="store_true", help="the joins and their baselines alone (issue 32)"
    )
    parser.add_argument(
        "--polls",
        action="store_true",
        help="the waiting page's poll, the check-in and their baselines alone (issue 32)",
    )
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.duration = args.duration or (1.0 if args.quick else 3.0)
    args.warmup = 0.3 if args.quick else 1.0
    args.fill = args.fill or (25 if args.quick else 100)
    if min(args.repeats, args.clients, args.threads, args.workers, args.fill) < 1:
        parser.error("counts must be at least 1")
    if not 0.1 <= args.duration <= 60:
        parser.error("--duration must be between 0.1 and 60 seconds")
    return args


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    per_window = args.duration + 1.0
    budget = 180 + (len(OPERATIONS) + 2) * (args.warmup + 1 + args.repeats * per_window)

    def work(stack: contextlib.ExitStack) -> None:
        progress(f"starting redis-server and two gunicorn servers (budget {budget:.0f} s)")
        began = time.monotonic()
        bench = Bench(args, stack)
        progress(f"servers and clients up in {time.monotonic() - began:.1f} s")
        results = bench.run()
        if args.joins:
            report(args, bench, results)
            join_goals(results)
            return
        if args.polls:
            report(args, bench, results)
            poll_goals(results)
            return
        paced = bench.paced(results)
        report(args, bench, results)
        goals(results, paced)
        join_goals(results)
        poll_goals(results)

    return run_bounded(budget, work)


if __name__ == "__main__":
    sys.exit(main())
