"""Debian's nginx and Caddy in front of the app, configured VERBATIM from docs/gate.md.

``doc_blocks(kind)`` extracts the fenced blocks of that kind from docs/gate.md;
``nginx_conf`` / ``caddy_conf`` replace only the example addresses and scratch paths
(``127.0.0.1:8000`` the app, ``127.0.0.1:9000`` the site, ``listen 80`` /
``http://shop.example`` the proxy, ``/var/cache/nginx/...`` a temporary directory);
``run_nginx`` / ``run_caddy`` start them on loopback, as a user, and always stop them.
The e2e tests (tests/e2e/test_gate_proxies.py) and the bench (bench/gate.py) use these.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gunicorn_app import e2e_server, free_port, stopping

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "gate.md"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CADDY = shutil.which("caddy") or "/usr/bin/caddy"
APP, SITE = "127.0.0.1:8000", "127.0.0.1:9000"


def doc_blocks(kind: str) -> list[str]:
    """Every fenced block of ``kind`` (nginx, caddyfile, ...) in docs/gate.md, in order."""
    return re.findall(rf"^```{kind}\n(.*?)^```$", GUIDE.read_text(), re.MULTILINE | re.DOTALL)


def nginx_conf(block: str, listen: int, app: int, site: int, scratch: Path) -> str:
    """A complete nginx.conf for a user on loopback around ``block`` (an http-context
    file of docs/gate.md, as pasted): only ports and scratch paths are replaced."""
    for old, new in (
        (APP, f"127.0.0.1:{app}"),
        (SITE, f"127.0.0.1:{site}"),
        ("listen 80;", f"listen 127.0.0.1:{listen};"),
        ("/var/cache/nginx/waiting-room", str(scratch / "gate-cache")),
    ):
        assert old in block or old != "listen 80;", f"docs/gate.md no longer has {old}"
        block = block.replace(old, new)
    (scratch / "site.conf").write_text(block)
    temp = "\n".join(
        f"    {kind}_temp_path {scratch / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
worker_processes 1;
pid {scratch / "nginx.pid"};
error_log {scratch / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
{temp}
    include {scratch / "site.conf"};
}}
"""


def caddy_conf(block: str, listen: int, app: int, site: int) -> str:
    """The Caddyfile of docs/gate.md as pasted, on loopback ports, with global options
    for a test (no admin endpoint, no automatic HTTPS) in front."""
    for old, new in (
        (APP, f"127.0.0.1:{app}"),
        (SITE, f"127.0.0.1:{site}"),
        ("http://shop.example {", f"http://127.0.0.1:{listen} {{"),
    ):
        assert old in block, f"docs/gate.md no longer has {old}"
        block = block.replace(old, new)
    return "{\n\tadmin off\n\tauto_https off\n}\n\n" + block


def wait_for_port(
    port: int, process: subprocess.Popen[bytes], log: Path, timeout: float = 15
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited {process.returncode}:\n{log.read_text()[-3000:]}")
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=0.5),
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def serving(argv: list[str], port: int, log: Path, **popen: Any) -> Iterator[None]:
    """``argv`` started with its output in ``log``, until it listens on ``port``; stopped
    on the way out."""
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=out, **popen)
    with stopping(process):
        wait_for_port(port, process, log)
        yield


@contextlib.contextmanager
def run_nginx(block: str, listen: int, app: int, site: int) -> Iterator[Path]:
    """nginx with ``block`` on 127.0.0.1:``listen``; yields its scratch directory."""
    scratch = Path(tempfile.mkdtemp(prefix="wr-nginx-"))
    scratch.chmod(0o755)  # run as root, nginx's workers are "nobody": they write the cache
    try:
        conf = scratch / "nginx.conf"
        conf.write_text(nginx_conf(block, listen, app, site, scratch))
        log = scratch / "stderr.log"
        check = subprocess.run([NGINX, "-t", "-c", str(conf), "-e", str(scratch / "error.log")],
                               capture_output=True, text=True)  # fmt: skip
        if check.returncode:
            raise RuntimeError(f"nginx -t refused the configuration:\n{check.stderr}")
        with serving([NGINX, "-c", str(conf), "-e", str(scratch / "error.log")], listen, log):
            yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def run_caddy(block: str, listen: int, app: int, site: int) -> Iterator[Path]:
    """Caddy with the Caddyfile ``block`` on 127.0.0.1:``listen``."""
    scratch = Path(tempfile.mkdtemp(prefix="wr-caddy-"))
    try:
        conf = scratch / "Caddyfile"
        conf.write_text(caddy_conf(block, listen, app, site))
        env = {**os.environ, "HOME": str(scratch), "XDG_DATA_HOME": str(scratch / "data"),
               "XDG_CONFIG_HOME": str(scratch / "config")}  # fmt: skip
        log = scratch / "caddy.log"
        argv = [CADDY, "run", "--config", str(conf), "--adapter", "caddyfile"]
        with serving(argv, listen, log, env=env, cwd=scratch):
            yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def run_origin(port: int, waiting_room: str, room: str, key_file: str = "") -> Iterator[None]:
    """The small origin site of tests/site_origin.py on 127.0.0.1:``port`` (``key_file``:
    where it reads the room's site key at each checkout)."""
    log = Path(tempfile.mkstemp(prefix="wr-origin-", suffix=".log")[1])
    argv = [sys.executable, str(ROOT / "tests" / "site_origin.py"), str(port), waiting_room, room]
    argv += [key_file] if key_file else []
    try:
        with serving(argv, port, log):
            yield
    finally:
        log.unlink(missing_ok=True)


class Site:
    """A proxy on 127.0.0.1 with the origin shop behind it and the app under /queue/."""

    def __init__(self, kind: str, url: str, server: Any, app: int, origin: int) -> None:
        self.kind, self.url, self.server = kind, url, server
        self.app, self.origin = app, origin


@contextlib.contextmanager
def gated_site(kind: str, redis_url: str, log_name: str, key_file: str = "") -> Iterator[Site]:
    """The app under gunicorn (2 workers) behind ``kind`` ("nginx" or "caddy")
    configured from docs/gate.md as pasted, the origin shop beside it reading its site
    key from ``key_file``; the test is skipped when the proxy is not installed."""
    binary = NGINX if kind == "nginx" else CADDY
    if not shutil.which(binary) and not Path(binary).exists():
        pytest.skip(f"no {kind} (.ci/run installs Debian's)")
    listen, origin = free_port(), free_port()
    public = f"http://127.0.0.1:{listen}/queue"
    with e2e_server(
        redis_url,
        log_name,
        WEBAPP_PROXY_COUNT="1",
        WEBAPP_PUBLIC_URL=public,
        WEBAPP_SWEEP_INTERVAL="0.25",
    ) as server:
        app = int(server.url.rsplit(":", 1)[1])
        proxy = (
            run_nginx(doc_blocks("nginx")[0], listen, app, origin)
            if kind == "nginx"
            else run_caddy(doc_blocks("caddyfile")[0], listen, app, origin)
        )
        with run_origin(origin, public, "shop", key_file), proxy:
            yield Site(kind, f"http://127.0.0.1:{listen}", server, app, origin)


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """GET without following redirects: status, headers, body."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as error:
        with contextlib.closing(error):
            return error.code, dict(error.headers), error.read().decode()
