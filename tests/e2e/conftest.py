"""End-to-end fixtures: the real app under gunicorn (2 workers) and Debian's Chromium.

gunicorn is started on a free port against the session's test Redis, waited for until
it answers, and always stopped. Each simulated person gets a browser context of their
own (their own cookies). Screenshots go to artifacts/ (not committed).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gunicorn_app import ARTIFACTS, Server, e2e_server
from playwright.sync_api import expect

CHROMIUM = "/usr/bin/chromium"
# An expectation waits as long as an action does (context.set_default_timeout below):
# Playwright's 5 s is too short for a page that Chromium parses on a machine the whole
# suite loads (CI saw a table half-parsed at 5 s). A claim that fails still fails.
expect.set_options(timeout=15_000)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[Server]:
    """The app under gunicorn with short beats and sweeps, so the scenarios run fast."""
    with e2e_server(
        redis_url,
        "e2e-gunicorn.log",
        WEBAPP_SWEEP_INTERVAL="0.25",
        WEBAPP_WS_BEAT_SECONDS="1",
        WEBAPP_WS_REFRESH_SECONDS="2",
        WEB_THREADS="16",
    ) as started:
        yield started


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
