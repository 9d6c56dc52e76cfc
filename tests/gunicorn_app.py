"""The real app under gunicorn, for tests that drive it over the network (e2e/, faults/).

``run_gunicorn(env)`` starts it on a free port with the given settings, waits until it
answers, and always stops it, keeping its log in artifacts/ for a failure seen in CI.
``Server`` calls the admin and JSON APIs; ``HttpVisitor`` is a person without a
browser: urllib with a cookie jar, for socket-level tests.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
ADMIN_TOKEN = "tests-admin-token-0123456789"  # the app refuses one under 16 characters
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    admin_token: str = ADMIN_TOKEN
    env: Mapping[str, str] | None = None  # what the app was started with

    def mailer_says(self, ok: bool = True, ttl: float = 600) -> None:
        """Records, as a running mailer's check of its SMTP server does, that mail can
        (or cannot) be sent: pages promise an email only when it can."""
        import redis

        from webapp.domain.mail import MailHealth, SmtpHealth
        from webapp.redis.keys import Keys

        env = self.env or {}
        client = redis.Redis.from_url(env["REDIS_URL"])
        try:
            keys = Keys(env.get("WEBAPP_REDIS_PREFIX", "wr"))
            MailHealth(client, keys).record(SmtpHealth(ok, "127.0.0.1:25", "", time.time()), ttl)
        finally:
            client.close()

    def as_admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Calls the admin API with the admin token; its JSON answer (None if empty)."""
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body or {}).encode(),
            method=method,
            headers={
                "Authorization": f"Bearer {self.admin_token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            raw = reply.read()
            return json.loads(raw) if raw else None

    def admin(self, room: str, **settings: Any) -> dict[str, Any]:
        """Creates or changes a room through the admin API."""
        answer: dict[str, Any] = self.as_admin("PUT", f"/api/admin/rooms/{room}", settings)
        return answer

    def site_key(self, room: str) -> str:
        """A new site key of ``room`` through the admin API (what counts stock)."""
        return str(self.as_admin("POST", f"/api/admin/rooms/{room}/site-key")["key"])

    def notice(self, room: str, text: str) -> None:
        """Sets the room's notice through the admin API."""
        self.as_admin("POST", f"/api/admin/rooms/{room}/notice", {"text": text})

    def delete(self, room: str) -> None:
        """Deletes a room through the admin API."""
        request = urllib.request.Request(
            f"{self.url}/api/admin/rooms/{room}",
            method="DELETE",
            headers={"Authorization": f"Bearer {self.admin_token}"},
        )
        urllib.request.urlopen(request, timeout=5).close()

    def visitor(self, name: str) -> HttpVisitor:
        return HttpVisitor(self, name)

    def api(self, method: str, path: str) -> dict[str, Any]:
        """Calls the JSON API as a non-browser client would."""
        data = None if method == "GET" else b""
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=5) as reply:
            answer: dict[str, Any] = json.load(reply)
            return answer

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)


class HttpVisitor:
    """A person without a browser: urllib with a cookie jar (for socket-level tests)."""

    def __init__(self, server: Server, name: str) -> None:
        self.server = server
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.post("/name", name=name)

    def open(self, path: str, data: bytes | None = None) -> str:
        with self.opener.open(self.server.url + path, data=data, timeout=10) as reply:
            text: str = reply.read().decode()
            return text

    def post(self, path: str, **form: str) -> str:
        token = CSRF.search(self.open("/"))
        assert token is not None
        body = urllib.parse.urlencode({**form, "csrf_token": token.group(1)}).encode()
        return self.open(path, data=body)

    def join(self, room: str) -> str:
        """Joins the room with its button (a POST), as a person does; the room's page."""
        return self.post(f"/rooms/{room}/join")

    def leave(self, room: str) -> str:
        """Leaves with the question's button; the room's page then says so (410: ended)."""
        try:
            return self.post(f"/rooms/{room}/leave")
        except urllib.error.HTTPError as ended:
            with contextlib.closing(ended):
                if ended.code != 410:
                    raise
                return str(ended.read().decode())

    def cookie(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


@contextlib.contextmanager
def stopping(
    process: subprocess.Popen[bytes], timeout: float = 10
) -> Iterator[subprocess.Popen[bytes]]:
    """Stops ``process`` on the way out: SIGTERM, then SIGKILL after ``timeout``."""
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def run_gunicorn(env: Mapping[str, str], log_name: str = "gunicorn.log") -> Iterator[Server]:
    """The app under gunicorn on a free port, with ``env`` over the process environment
    and its own data directory; stopped on exit, its log kept as artifacts/<log_name>."""
    data_dir = tempfile.mkdtemp(prefix="wr-gunicorn-")
    port = free_port()
    full_env = {
        **os.environ,
        "WEBAPP_ADMIN_TOKEN": ADMIN_TOKEN,
        "WEBAPP_DATA_DIR": data_dir,
        # browser tests join many times from loopback; the limits have their own tests
        "WEBAPP_JOIN_LIMIT": "100000 per minute",
        "WEBAPP_JOIN_NETWORK_LIMIT": "100000 per minute",
        "WEBAPP_SIGNUP_LIMIT": "100000 per minute",
        **env,
    }
    log = Path(data_dir) / "gunicorn.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "python:webapp.web.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{port}",
                "webapp:create_app()",
            ],
            cwd=ROOT,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    started = Server(
        f"http://127.0.0.1:{port}", process, log, full_env["WEBAPP_ADMIN_TOKEN"], full_env
    )
    try:
        with stopping(process, timeout=15):
            wait_until_answering(started)
            yield started
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copyfile(log, ARTIFACTS / log_name)
        shutil.rmtree(data_dir, ignore_errors=True)


@contextlib.contextmanager
def e2e_server(redis_url: str, log_name: str, prefix: str = "", **env: str) -> Iterator[Server]:
    """The app as the browser tests run it: 2 workers on the session's Redis under a
    key prefix of its own (``prefix``, else a random one), ``env`` over that."""
    settings = {
        "REDIS_URL": redis_url,
        "WEBAPP_REDIS_PREFIX": prefix or f"e2e{secrets.token_hex(3)}",
        "WEBAPP_SECRET_KEY": "e2e-secret",
        "WEB_CONCURRENCY": "2",
        **env,
    }
    with run_gunicorn(settings, log_name=log_name) as started:
        yield started


def wait_until_answering(server: Server, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{server.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/rooms", timeout=1):
                return
        except urllib.error.HTTPError as error:  # up, but not ready yet
            error.close()
            time.sleep(0.1)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    pytest.fail(f"gunicorn did not answer in {timeout}s:\n{server.log.read_text()[-3000:]}")
