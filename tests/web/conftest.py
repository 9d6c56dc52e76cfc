"""Fixtures of the browser-page tests: an app on the session's Redis and visitors."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from argon2 import PasswordHasher
from flask import Flask
from flask.testing import FlaskClient

from webapp import create_app
from webapp.domain import admins as accounts
from webapp.domain.mail import SmtpHealth
from webapp.domain.reports import Reports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.settings import RoomSettings
from webapp.domain.visits import Visits

CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
SECRET = "web-tests"  # the apps' SECRET_KEY here: links the tests sign use it too
PASSWORD = "correct horse battery"  # the panel account "ada"'s


# Tests join many times from one address: the per-address limits have their own tests
LENIENT = {"JOIN_LIMIT": "100000 per minute", "JOIN_NETWORK_LIMIT": "100000 per minute",
           "SIGNUP_LIMIT": "100000 per minute"}  # fmt: skip


@contextlib.contextmanager
def running_app(redis_url: str, **config: Any) -> Iterator[Flask]:
    """The app on the session's Redis as the page tests use it (no background sweep,
    statistics read afresh on every request), ``config`` over that; stopped after."""
    app = create_app({"TESTING": True, "REDIS_URL": redis_url, "SECRET_KEY": SECRET,
                      "SWEEP_INTERVAL": 0, "STATS_REFRESH": 0, **LENIENT, **config})  # fmt: skip
    try:
        yield app
    finally:
        app.extensions["services"].stop()


def cheap_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 at its lowest costs for the panel's accounts: the same code path, a
    fraction of the time."""
    monkeypatch.setattr(
        accounts, "HASHER", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    )


def mailer_says(app: Flask, ok: bool = True, error: str = "") -> None:
    """Records what a mailer's check of its SMTP server found, as a running mailer does
    (pages promise an email only when it can be sent)."""
    health = SmtpHealth(ok, "127.0.0.1:25", error, 0.0)
    app.extensions["services"].mail.record(health, ttl=60)


@pytest.fixture
def app(redis_url: str, r: redis.Redis) -> Iterator[Flask]:
    with running_app(redis_url) as app:
        yield app


@pytest.fixture
def clocked_app(redis_url: str, r: redis.Redis, tmp_path: Any, clock: Any) -> Iterator[Flask]:
    """The app on the test's clock, with a data directory of its own."""
    with running_app(redis_url, DATA_DIR=str(tmp_path), CLOCK=clock) as app:
        yield app


@pytest.fixture
def panel_app(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, r: redis.Redis, tmp_path: Any, clock: Any
) -> Iterator[Flask]:
    """The same, with the panel account "ada" (argon2 at its lowest costs)."""
    cheap_hashing(monkeypatch)
    with running_app(redis_url, DATA_DIR=str(tmp_path), CLOCK=clock) as app:
        app.extensions["services"].admins.add("ada", PASSWORD)
        yield app


@pytest.fixture
def panel(app: Flask) -> Any:
    """The admin "ada", logged in to the module's app (a ``panel_app``): a Panel."""
    from tests.web.test_admin_panel import Panel  # the panel's tests own the class

    panel = Panel(app.test_client())
    assert panel.login().status_code == 303
    return panel


@pytest.fixture
def engine(app: Flask) -> WaitingRooms:
    rooms: WaitingRooms = app.extensions["services"].rooms
    return rooms


@pytest.fixture
def visits(app: Flask) -> Visits:
    found: Visits = app.extensions["services"].visits
    return found


@pytest.fixture
def reports(app: Flask) -> Reports:
    found: Reports = app.extensions["services"].reports
    return found


class Visitor:
    """A person with a browser: a test client with its own session cookie."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client

    def csrf(self, path: str = "/") -> str:
        match = CSRF.search(self.client.get(path).get_data(as_text=True))
        assert match, f"no CSRF token on {path}"
        return match.group(1)

    def named(self, name: str) -> Visitor:
        reply = self.client.post("/name", data={"name": name, "csrf_token": self.csrf()})
        assert reply.status_code == 303
        return self

    def get(
        self, path: str, htmx: bool = False, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> Any:
        asks = {"HX-Request": "true"} if htmx else {}
        return self.client.get(path, headers={**asks, **(headers or {})}, **kwargs)

    def join(self, room: str, headers: dict[str, str] | None = None) -> Any:
        """Joins as a person does (the room's button: a POST), then the room's page; or
        the refusal's page."""
        data = {"csrf_token": self.csrf()}
        reply = self.client.post(f"/rooms/{room}/join", data=data, headers=headers)
        if reply.status_code != 303:
            return reply
        return self.client.get(f"/rooms/{room}", headers=headers)

    def leave(self, room: str) -> Any:
        """Leaves (the question's button: a POST)."""
        return self.client.post(f"/rooms/{room}/leave", data={"csrf_token": self.csrf()})


@pytest.fixture
def visitor(app: Flask) -> Visitor:
    return Visitor(app.test_client())


@pytest.fixture
def make_visitor(app: Flask) -> Any:
    def make(name: str) -> Visitor:
        return Visitor(app.test_client()).named(name)

    return make


@pytest.fixture
def make_room(engine: WaitingRooms) -> Any:
    def make(name: str = "hall", **settings: Any) -> RoomSettings:
        return engine.configure(name, settings)

    return make
