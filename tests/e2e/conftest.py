"""End-to-end fixtures: the real app under gunicorn (2 workers) and Debian's Chromium.

gunicorn is started on a free port against the session's test Redis, waited for until
it answers, and always stopped. Each simulated person gets a browser context of their
own (their own cookies). Screenshots go to artifacts/ (not committed).
"""

from __future__ import annotations

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ADMIN_TOKEN = "e2e-admin-token"
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

    def admin(self, room: str, **settings: Any) -> dict[str, Any]:
        """Creates or changes a room through the admin API."""
        request = urllib.request.Request(
            f"{self.url}/api/admin/rooms/{room}",
            data=json.dumps(settings).encode(),
            method="PUT",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            answer: dict[str, Any] = json.load(reply)
            return answer

    def delete(self, room: str) -> None:
        """Deletes a room through the admin API."""
        request = urllib.request.Request(
            f"{self.url}/api/admin/rooms/{room}",
            method="DELETE",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
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

    def cookie(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[Server]:
    """The app under gunicorn with short beats and sweeps, so the scenarios run fast."""
    data_dir = tempfile.mkdtemp(prefix="wr-e2e-")
    port = free_port()
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WEBAPP_REDIS_PREFIX": f"e2e{secrets.token_hex(3)}",
        "WEBAPP_SECRET_KEY": "e2e-secret",
        "WEBAPP_ADMIN_TOKEN": ADMIN_TOKEN,
        "WEBAPP_DATA_DIR": data_dir,
        "WEBAPP_SWEEP_INTERVAL": "0.25",
        "WEBAPP_WS_BEAT_SECONDS": "1",
        "WEBAPP_WS_REFRESH_SECONDS": "2",
        "WEB_CONCURRENCY": "2",
        "WEB_THREADS": "16",
    }
    log = Path(data_dir) / "gunicorn.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "python:webapp.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{port}",
                "webapp:create_app()",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    started = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        wait_until_answering(started)
        yield started
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        ARTIFACTS.mkdir(exist_ok=True)  # the server's log, for a failure seen in CI
        shutil.copyfile(log, ARTIFACTS / "e2e-gunicorn.log")
        shutil.rmtree(data_dir, ignore_errors=True)


def wait_until_answering(server: Server, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{server.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/rooms", timeout=1):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    pytest.fail(f"gunicorn did not answer in {timeout}s:\n{server.log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def person(browser: Any) -> Iterator[Callable[..., Any]]:
    """Makes a person: a browser context of their own, at a given window width."""
    contexts = []
    violations: list[str] = []

    def make(width: int = 1280, height: int = 860, javascript: bool = True) -> Any:
        context = browser.new_context(
            viewport={"width": width, "height": height}, java_script_enabled=javascript
        )
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on("console", lambda m: violations.append(m.text) if csp_report(m) else None)
        return page

    yield make
    for context in contexts:
        context.close()
    assert not violations, f"the page broke its Content-Security-Policy: {violations}"


def csp_report(message: Any) -> bool:
    return message.type == "error" and "Content Security Policy" in message.text


@pytest.fixture
def room(server: Server) -> Callable[..., str]:
    def make(**settings: Any) -> str:
        name = f"e2e-{secrets.token_hex(4)}"
        server.admin(name, **settings)
        return name

    return make


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
