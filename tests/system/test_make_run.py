"""The README's command, ``make run``, as a newcomer runs it on a fresh data directory:
the mailer finds the app's own Redis and an email reaches a real SMTP server on
loopback, its links to the address make serves; its start is said in words; with no
SMTP server it says so once; the admin password is set once, without a traceback; and
Ctrl+C stops it all with no traceback."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from gunicorn_app import ROOT, Server, free_port, wait_until_answering
from recording import smtp_server

from tests.e2e.test_chat_socket import Socket
from tests.system.test_run_command import redis_servers_for
from webapp.config import Defaults
from webapp.domain.mail import MailHealth, SmtpHealth
from webapp.redis.keys import Keys
from webapp.workers.mailer import CHECK_DOWN

pytestmark = pytest.mark.slow
NOT_A_NEWCOMERS = {"REDIS_URL", "MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}
PASSWORD = "a newcomer's first password"


class Run:
    """``make run`` in its own session (so the test can press Ctrl+C on all of it),
    its output collected line by line."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        # A newcomer's terminal: no REDIS_URL, and not inside another make (under `make
        # test` make's MAKELEVEL and MAKEFLAGS would turn on its "Entering directory" and
        # "Leaving directory" lines, printed at a time of make's choosing)
        full = {k: v for k, v in os.environ.items() if k not in NOT_A_NEWCOMERS}
        full |= {"WEBAPP_DATA_DIR": str(data_dir), "WEB_CONCURRENCY": "2", **env}
        self.process = subprocess.Popen(
            ["make", "run", f"PORT={self.port}", "HOST=127.0.0.1"],
            cwd=ROOT, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.server = Server(f"http://127.0.0.1:{self.port}", self.process, data_dir / "none")
        self.server.admin_token = full["WEBAPP_ADMIN_TOKEN"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.output()):
            assert self.process.poll() is None, self.output()[-3000:]
            assert time.monotonic() < deadline, f"no {pattern!r} in:\n{self.output()[-3000:]}"
            time.sleep(0.1)

    def smtp_checks(self) -> SmtpHealth | None:
        """The mailer's last check of its SMTP server, as recorded in the app's Redis."""
        client = redis.Redis(unix_socket_path=str(self.data_dir / "redis" / "redis.sock"))
        try:
            return MailHealth(client, Keys(Defaults.REDIS_PREFIX)).read()
        finally:
            client.close()

    def ctrl_c(self) -> list[str]:
        """Presses Ctrl+C (SIGINT to the whole foreground group); the lines it printed."""
        before = len(self.lines)
        os.killpg(self.process.pid, signal.SIGINT)
        self.process.wait(timeout=30)
        self._reader.join(10)
        return self.lines[before:]

    def stop(self) -> None:
        """Stops what is still running (Ctrl+C, then SIGKILL), and any redis-server of
        the data directory left behind (it runs in a session of its own)."""
        for sig in (signal.SIGINT, signal.SIGKILL):
            if self.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=30)
        for pid in redis_servers_for(self.data_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._reader.join(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


@contextlib.contextmanager
def make_run(data_dir: Path, **env: str) -> Iterator[Run]:
    token = "make-run-admin-token-0123456789"
    run = Run(data_dir, {"WEBAPP_ADMIN_TOKEN": token, **env})
    try:
        wait_until_answering(run.server, timeout=120)  # a first `make run` may install
        yield run
    finally:
        run.stop()


def test_make_run_mails_sets_the_password_once_and_stops_quietly(tmp_path):
    """A first start: every line it prints is a log line in one format (gunicorn's and
    the app's, no recipe echoed); one line says the password was set, no traceback; a
    seat offered to someone who gave an email is mailed through the SMTP server on
    loopback; Ctrl+C
    with a room socket open ends everything with no traceback, in one line (beside make's
    own "Interrupt")."""
    with (
        smtp_server() as (mailbox, smtp_port),
        make_run(
            tmp_path,
            WEBAPP_ADMIN_PASSWORD=PASSWORD,
            WEBAPP_SMTP_PORT=str(smtp_port),
            WEBAPP_PUBLIC_URL="http://mail.test",
        ) as run,
    ):
        server = run.server
        run.wait_for(r"set the password of 'admin'")
        run.wait_for(rf"sending mail through the SMTP server at 127\.0\.0\.1:{smtp_port}")
        server.admin("hall", capacity=2, dropout_seconds=600)
        ann, cy = server.visitor("Ann"), server.visitor("Cy")
        for seated in (ann, cy):
            seated.join("hall")
        sock = Socket(server, ann, "hall")  # a room socket open: the hub listens
        bo = join(server, "hall", email="bo@example.org")
        assert bo["status"] == "waiting"
        cy.leave("hall")  # Cy's seat is offered to Bo, who gave an email
        mailbox.link("bo@example.org", "http://mail.test/claim/", timeout=30)
        # Both workers have started (each says where its Redis is), so no line of a
        # slow start is read after Ctrl+C and taken for one of the stop's
        run.wait_for(r"(?s)( webapp Redis: .*){2}")
        started = run.output()
        stopped = run.ctrl_c()
        sock.close()
    assert started.count("set the password of 'admin'") == 1
    assert not [line for line in started.splitlines() if not LOG_LINE.match(line)], started
    assert "Traceback" not in started and "VerifyMismatchError" not in started, started
    said = "\n".join(stopped)
    assert "Traceback" not in said and "Error" not in said, said
    said = [line for line in stopped if not MAKES_OWN.search(line)]
    assert len(said) == 1 and "Shutting down" in said[0], stopped  # one line, besides make's
    assert redis_servers_for(tmp_path) == []  # the embedded Redis stopped with the app


# Every line make run prints, gunicorn's and the app's alike (webapp/infra/logs.py)
LOG_LINE = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\] \[\d+\] "
    r"\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\] \S"
)
# make's own lines, not ours: its Interrupt, and the directory lines a nested make prints
MAKES_OWN = re.compile(r"^make(\[\d+\])?: (\*\*\* .* Interrupt|(Entering|Leaving) directory .*)$")


def join(server: Server, room: str, **body: str) -> dict[str, Any]:
    """A join through the JSON API (``body``: name, email)."""
    request = urllib.request.Request(
        f"{server.url}/api/rooms/{room}/join", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer: dict[str, Any] = json.load(reply)
        return answer


def test_make_run_without_an_smtp_server_says_so_once(tmp_path):
    """Nothing listens at the SMTP address: the output says so once, plainly, however
    long it runs, and the waiting page offers no email."""
    port = free_port()  # nothing listens there
    with make_run(tmp_path, WEBAPP_SMTP_PORT=str(port)) as run:
        run.wait_for(r"Mail cannot be sent")
        first = run.smtp_checks()
        assert first is not None and not first.ok
        # Two more checks (one every CHECK_DOWN seconds while nothing answers), counted
        # in Redis rather than assumed from a sleep
        deadline = time.monotonic() + 10 * CHECK_DOWN
        while (last := run.smtp_checks()) is None or last.at < first.at + 1.5 * CHECK_DOWN:
            assert time.monotonic() < deadline, f"the mailer stopped checking: {last}"
            time.sleep(0.2)
        said = [line for line in run.lines if "Mail cannot be sent" in line]
        assert len(said) == 1
        assert f"no SMTP server answers at 127.0.0.1:{port}" in said[0]
        assert "WEBAPP_SMTP_HOST" in said[0]
        run.server.admin("hall", capacity=1)
        ann, bo = run.server.visitor("Ann"), run.server.visitor("Bo")
        ann.join("hall")
        page = bo.join("hall")
        assert "Keep this page" in page and 'name="email"' not in page


def test_make_run_links_emails_to_its_own_address_and_starts_in_words(tmp_path):
    """Without WEBAPP_PUBLIC_URL, `make run PORT=...` puts its own address in the emails'
    links, and the claim link opens its page. The mailer's start is one line in words
    (no process name, no connection error while the app's Redis starts) naming where
    the links go, and nothing warns about the public address: make set it."""
    with (
        smtp_server() as (mailbox, smtp_port),
        make_run(tmp_path, WEBAPP_SMTP_PORT=str(smtp_port)) as run,
    ):
        server = run.server
        run.wait_for(r"sending mail through the SMTP server")
        server.admin("hall", capacity=1, dropout_seconds=600)
        ann = server.visitor("Ann")
        ann.join("hall")
        assert join(server, "hall", email="bo@example.org")["status"] == "waiting"
        ann.leave("hall")  # Ann's seat is offered to Bo, who gave an email
        link = mailbox.link("bo@example.org", "http://", timeout=30)
        assert link.startswith(f"http://127.0.0.1:{run.port}/claim/"), link
        with urllib.request.urlopen(link, timeout=10) as page:
            assert page.status == 200
        started = run.output()
    mailer = [line for line in started.splitlines() if re.search(r"\] mailer ", line)]
    ready = f"mailer ready: it sends the rooms' emails, with links to http://127.0.0.1:{run.port}"
    assert len([line for line in mailer if ready in line]) == 1, started
    assert not [line for line in mailer if re.search(r"\w+:\d+ started|Redis", line)], started
    assert "Error" not in started and "Traceback" not in started, started
    assert "WEBAPP_PUBLIC_URL" not in started, started


def test_a_mailer_without_a_public_url_says_so_once(tmp_path, redis_url):
    """The mailer as the Procfile starts it, without WEBAPP_PUBLIC_URL: one warning at
    start that the emails' links use the default address, and how to set it."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_A_NEWCOMERS | {"WEBAPP_PUBLIC_URL"}}
    env |= {"REDIS_URL": redis_url, "WEBAPP_DATA_DIR": str(tmp_path),
            "WEBAPP_REDIS_PREFIX": "mailer-url", "WEBAPP_SMTP_PORT": str(free_port())}  # fmt: skip
    mailer = subprocess.Popen(
        [sys.executable, "-m", "webapp.workers.mailer"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(raw.decode(errors="replace") for raw in mailer.stdout or ()),
        daemon=True,
    )
    reader.start()
    try:  # started (however long a loaded machine takes), then a few rounds later
        deadline = time.monotonic() + 120
        while not any("WEBAPP_PUBLIC_URL" in line for line in lines):
            assert mailer.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
        time.sleep(3)
    finally:
        mailer.terminate()
        mailer.wait(timeout=15)
        reader.join(timeout=15)
        if mailer.stdout is not None:
            mailer.stdout.close()
    said = "".join(lines)
    warned = [line for line in said.splitlines() if "WEBAPP_PUBLIC_URL" in line]
    assert len(warned) == 1, said
    assert "WEBAPP_PUBLIC_URL is not set" in warned[0]
    assert "http://127.0.0.1:8000" in warned[0], said
