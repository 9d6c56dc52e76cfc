"""Starting and stopping the servers a bench measures: loopback only, always stopped.

Each server runs in its own session (the terminal's Ctrl-C reaches the bench, which then
stops them in order) and gets SIGTERM if the bench itself dies, even by SIGKILL (Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from webapp.redis.connection import redis_server_binary

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
# A bench's visitors all join from HOST: the limits per address (issue 25) are counted,
# as in production, but set beyond what any bench sends
OPEN_JOIN_LIMITS = {
    "WEBAPP_JOIN_LIMIT": "10000000 per minute",
    "WEBAPP_JOIN_NETWORK_LIMIT": "10000000 per minute",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM if the bench dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def spawn(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Starts a server in its own session, its output in ``log``."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )


def stop(proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL to its whole process group (its own session: ours alone)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)


def tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{log.stem} did not start; the end of {log}:\n{tail(log)}")
        time.sleep(0.05)


def answers(url: str, timeout: float = 1) -> bool:
    """Whether an HTTP server answers ``url`` with a success within ``timeout`` seconds."""
    try:
        urllib.request.urlopen(url, timeout=timeout).close()
        return True
    except OSError:
        return False


def redis_answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(stack: contextlib.ExitStack, workdir: Path) -> tuple[int, int]:
    """A throwaway redis-server on loopback, stopped with ``stack``; its port and pid."""
    port = free_port()
    log = workdir / "redis.log"
    argv = [
        redis_server_binary(),
        "--port", str(port), "--bind", HOST,
        "--save", "", "--appendonly", "no", "--dir", str(workdir),
    ]  # fmt: skip
    proc = spawn(argv, log)
    stack.callback(stop, proc)
    wait_until(lambda: redis_answers(port), proc, log)
    return port, proc.pid


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its children (gunicorn's workers), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            children = (task / "children").read_text().split()
            pids += [int(child) for child in children]
    for each in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


class OutOfTime(Exception):
    pass


def run_bounded(budget: float, work: Callable[[contextlib.ExitStack], None]) -> int:
    """Runs ``work(stack)`` for at most ``budget`` seconds, then always closes ``stack``
    (which stops the servers). Exit codes: 0 done, 1 failed or out of time, 130 Ctrl-C,
    143 SIGTERM."""

    def out_of_time(_signum: int, _frame: object) -> NoReturn:
        raise OutOfTime(f"the bench ran past its budget of {budget:.0f} s")

    def terminated(_signum: int, _frame: object) -> NoReturn:
        raise SystemExit(143)

    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    signal.signal(signal.SIGALRM, out_of_time)
    signal.signal(signal.SIGTERM, terminated)
    signal.alarm(int(budget))
    stack = contextlib.ExitStack()
    try:
        work(stack)
        return 0
    except KeyboardInterrupt:
        print("  interrupted; stopping the servers", file=sys.stderr, flush=True)
        return 130
    except (OutOfTime, RuntimeError, OSError) as error:
        print(f"bench failed: {error}", file=sys.stderr)
        return 1
    finally:
        # Nothing may interrupt the clean-up; each step is bounded by its own timeouts.
        signal.alarm(0)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stack.close()
