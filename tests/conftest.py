"""Shared fixtures: one private redis-server per test session, flushed before each test."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def server_command(binary: str, port: int, directory: str) -> list[str]:
    """A throwaway redis-server on loopback: nothing kept on disk."""
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", directory]  # fmt: skip


def start_redis_server(directory: str) -> tuple[subprocess.Popen[bytes], int]:
    from webapp.redis.connection import redis_server_binary

    port = free_port()
    proc = subprocess.Popen(
        server_command(redis_server_binary(), port, directory),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for_ping(port)
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


def start_redis_cluster(
    directory: str, nodes: int = 3
) -> tuple[list[subprocess.Popen[bytes]], int]:
    """A Redis Cluster of `nodes` primaries on free loopback ports; returns a node's port."""
    from webapp.redis.connection import redis_server_binary

    server = redis_server_binary()
    cli = str(Path(server).with_name("redis-cli"))
    procs, ports = [], []
    for _ in range(nodes):
        port = free_cluster_port()
        procs.append(
            subprocess.Popen(
                [
                    *server_command(server, port, directory),
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    f"nodes-{port}.conf",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        ports.append(port)
    for port in ports:
        _wait_for_ping(port)
    subprocess.run(
        [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
         "--cluster-replicas", "0", "--cluster-yes"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(port=ports[0], decode_responses=True)
    for _ in range(400):
        if client.cluster("info")["cluster_state"] == "ok":
            break
        time.sleep(0.025)
    client.close()
    return procs, ports[0]


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    import random

    while True:
        port = random.randint(20000, 50000)
        try:
            for candidate in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


def _wait_for_ping(port: int) -> None:
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client = redis.Redis(port=port, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.025)
    client.close()


@pytest.fixture(scope="session")
def cluster_url() -> Iterator[str]:
    """A private 3-node Redis Cluster for the session, started on first use."""
    directory = tempfile.mkdtemp(prefix="wr-test-cluster-")
    procs, port = start_redis_cluster(directory)
    try:
        yield f"redis+cluster://127.0.0.1:{port}"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=["redis", pytest.param("cluster", marks=pytest.mark.cluster)])
def db(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A flushed client of the session's Redis, and again of its Redis Cluster: tests
    that take `db` run every case against both."""
    from webapp.redis.connection import connect

    name = "redis_url" if request.param == "redis" else "cluster_url"
    client = connect(request.getfixturevalue(name))
    client.flushall()
    yield client
    client.close()


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
