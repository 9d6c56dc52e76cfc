"""The production install: the wheel alone, in a fresh virtualenv, serves the app with the
Procfile's command from a directory outside the source tree."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from gunicorn_app import free_port

from webapp.web.i18n import LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {"build", "dist", "var", "artifacts", "test-results"}
# Every module must import with the declared dependencies alone, not just those boot uses.
IMPORT_EVERY_MODULE = """
import importlib, pkgutil, webapp
for module in pkgutil.walk_packages(webapp.__path__, "webapp."):
    importlib.import_module(module.name)
print(webapp.__file__)
"""


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A temporary directory outside the repository, removed afterwards (a virtualenv
    with gevent is too big to leave behind)."""
    path = Path(tempfile.mkdtemp(prefix="wr-install-"))
    assert not path.is_relative_to(ROOT)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def clean_env(**settings: str) -> dict[str, str]:
    """This environment minus anything that would let the source tree or the test's own
    settings leak into the installed app."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "WEBAPP_", "WEB_")) and k not in ("REDIS_URL", "PORT")
    }
    env.pop("VIRTUAL_ENV", None)
    return env | settings


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> None:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stderr.decode()[-4000:]


def not_source(directory: str, names: list[str]) -> set[str]:
    """What a build never needs: bytecode, and at the top virtualenvs, caches, git,
    earlier builds and local data."""
    top = Path(directory) == ROOT
    return {
        name
        for name in names
        if name == "__pycache__"
        or (top and (name.startswith(".") or name in LOCAL or name.endswith(".egg-info")))
    }


def build_wheel(scratch: Path) -> Path:
    """The wheel of a copy of the checkout: building in place would leave build/ and
    *.egg-info behind, and a stale build/lib would ship files deleted since."""
    source, wheels = scratch / "source", scratch / "wheels"
    shutil.copytree(ROOT, source, ignore=not_source, symlinks=True)
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), "."],
        cwd=source,
        env=clean_env(),
        timeout=120,
    )
    [wheel] = wheels.glob("webapp-*.whl")
    return wheel


def shipped_files(source: Path) -> set[str]:
    """Where each file of the package, its templates and its static files belongs in
    the wheel."""
    mapping = {"webapp": "webapp", "templates": "webapp/templates", "static": "webapp/static"}
    return {
        f"{target}/{path.relative_to(source / folder).as_posix()}"
        for folder, target in mapping.items()
        for path in (source / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def procfile_web() -> str:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith("web:"):
            return line.removeprefix("web:").strip()
    raise AssertionError("the Procfile has no web: line")


def get(url: str) -> tuple[int, str, bytes]:
    """Status, content type and body, for error statuses too."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers.get_content_type(), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get_content_type(), error.read()


def start(command: str, cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The command in its own process group, once it answers (at most 30 s)."""
    with log.open("wb") as out:  # a file, not a pipe: an unread pipe can stall gunicorn
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{env['PORT']}/api/rooms"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            get(url)
            return proc
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise AssertionError(f"{command!r} did not answer:\n{log.read_text()[-4000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the whole process group (bash, gunicorn, its workers), SIGKILL if it
    is still there after 20 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
            return


@pytest.mark.slow
def test_wheel_in_fresh_virtualenv_serves_the_procfile_command(scratch, redis_url):
    """pip install of the wheel alone, then the Procfile's web: line, run elsewhere,
    serves pages, static files, the API and the friendly error page."""
    wheel = build_wheel(scratch)
    with zipfile.ZipFile(wheel) as archive:
        missing = shipped_files(scratch / "source") - set(archive.namelist())
        catalogues = {n for n in archive.namelist() if n.startswith("webapp/translations/")}
    assert not missing, f"not in the wheel (see pyproject.toml [tool.setuptools]): {missing}"
    # The message catalogues, compiled by the build (setup.py): .mo are never committed
    compiled = {
        f"webapp/translations/{lang}/LC_MESSAGES/messages.mo" for lang in LANGUAGES if lang != "en"
    }
    assert catalogues == compiled

    venv, elsewhere = scratch / "venv", scratch / "elsewhere"
    elsewhere.mkdir()
    env = clean_env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    run([sys.executable, "-m", "venv", str(venv)], cwd=elsewhere, env=env, timeout=60)
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", str(wheel)], cwd=elsewhere, env=env, timeout=300)
    imported = subprocess.run(
        [python, "-c", IMPORT_EVERY_MODULE], cwd=elsewhere, env=env, capture_output=True, timeout=60
    )
    assert imported.returncode == 0, imported.stderr.decode()[-4000:]
    assert Path(imported.stdout.decode().strip()).is_relative_to(venv)

    # The Procfile listens on every interface for the platform's router; here loopback.
    command = procfile_web().replace("0.0.0.0", "127.0.0.1")
    port = free_port()
    env |= {
        "PORT": str(port),
        "REDIS_URL": redis_url,
        "WEB_CONCURRENCY": "2",
        "WEBAPP_SECRET_KEY": "install-test-secret",
    }
    log = scratch / "gunicorn.log"
    proc = start(command, elsewhere, env, log)
    try:
        base = f"http://127.0.0.1:{port}"
        assert get(f"{base}/")[:2] == (200, "text/html"), log.read_text()[-4000:]
        status, kind, body = get(f"{base}/static/css/app.css")
        assert (status, kind) == (200, "text/css")
        assert body == (scratch / "source" / "static" / "css" / "app.css").read_bytes()
        status, kind, body = get(f"{base}/api/rooms")
        assert (status, kind) == (200, "application/json")
        assert isinstance(json.loads(body), list)
        status, kind, body = get(f"{base}/no-such-page")
        assert (status, kind) == (404, "text/html"), log.read_text()[-4000:]
        assert b"We could not find that" in body  # templates/error.html
    finally:
        stop(proc)
    assert "Traceback" not in log.read_text(), log.read_text()[-4000:]
