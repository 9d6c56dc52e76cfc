"""Shared fixtures: one private redis-server per test session, flushed before each test."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis

from webapp.redis.keys import Keys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeClock:
    """Time under the test's control: the engine gets `now` from here."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def start_redis_server(directory: str) -> tuple[subprocess.Popen[bytes], int]:
    from webapp.redis.connection import redis_server_binary

    port = free_port()
    proc = subprocess.Popen(
        [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            directory,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.025)
    client.close()
    return proc, port


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A private redis-server on a free port for the whole test session."""
    directory = tempfile.mkdtemp(prefix="wr-test-redis-")
    proc, port = start_redis_server(directory)
    os.environ["WEBAPP_TEST_REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the session's Redis, flushed before each test."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def keys() -> Keys:
    return Keys("wrtest")
