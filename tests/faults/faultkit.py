"""The fault tests' settings, and a redis-server they may stop, start, freeze and thaw."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from gunicorn_app import free_port
from redis.backoff import NoBackoff
from redis.retry import Retry

from webapp.redis.connection import redis_server_binary

SECRET_KEY = "faults-secret-key"
PREFIX = "faults"
CAPACITY = 5
GRACE = 5  # seconds a closed socket keeps its seat
DROPOUT = 10  # seconds a waiter keeps the place without checking in
BEAT = 1.0  # WEBAPP_WS_BEAT_SECONDS
SWEEP = 0.5  # WEBAPP_SWEEP_INTERVAL


class RedisServer:
    """A redis-server on a free loopback port, every write fsynced to its AOF, which
    the test may stop (SIGTERM), start again (same port, same data), freeze (SIGSTOP)
    and thaw (SIGCONT)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.frozen = False
        self.stopped_at = self.started_at = self.frozen_at = self.thawed_at = 0.0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Starts the server and returns once it answers PING (its AOF loaded)."""
        assert self.process is None, "already running"
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.directory), "--appendonly", "yes", "--appendfsync", "always",
             "--save", "", "--logfile", str(self.directory / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(
            port=self.port,
            socket_timeout=0.5,
            socket_connect_timeout=0.5,
            retry=Retry(NoBackoff(), 0),
        )
        deadline = time.monotonic() + 15
        try:
            while True:
                assert self.process.poll() is None, f"redis-server exited: {self.log()}"
                assert time.monotonic() < deadline, f"redis-server did not answer: {self.log()}"
                try:
                    client.ping()
                    break
                except redis.RedisError:  # not listening yet, or still loading its AOF
                    time.sleep(0.02)
        finally:
            client.close()
        self.started_at = time.monotonic()

    def stop(self) -> None:
        """SIGTERM, and waits until it has exited (its AOF is complete)."""
        if self.process is None:
            return
        self.thaw()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None
        self.stopped_at = time.monotonic()

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        self.frozen = True
        self.frozen_at = time.monotonic()

    def thaw(self) -> None:
        if self.process is not None and self.frozen:
            self.process.send_signal(signal.SIGCONT)
            self.frozen = False
            self.thawed_at = time.monotonic()

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """Stopped inside the block; started again from its AOF when it ends, however."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    @contextlib.contextmanager
    def frozen_while(self) -> Iterator[None]:
        """Frozen inside the block; thawed when it ends, however."""
        self.freeze()
        try:
            yield
        finally:
            self.thaw()

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text()[-2000:] if path.exists() else "(no log)"
