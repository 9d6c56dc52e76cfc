"""Per-address limits on joins and sign-ups, and on wrong admin passwords (issue 25):
counted in Redis by flask-limiter, 429 with Retry-After beyond them, re-joins free."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from tests.web.conftest import PASSWORD, Visitor, cheap_hashing, running_app


@pytest.fixture
def app(redis_url: str, r: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    cheap_hashing(monkeypatch)
    limits = {
        "JOIN_LIMIT": "3 per minute",
        "JOIN_NETWORK_LIMIT": "5 per minute",
        "SIGNUP_LIMIT": "2 per hour",
        "ADMIN_FAILURE_LIMIT": "1000 per minute",
        "ADMIN_ACCOUNT_LIMIT": "4 per 15 minutes",
        "ADMIN_TOTAL_LIMIT": "6 per 15 minutes",
    }
    with running_app(redis_url, DATA_DIR=str(tmp_path), **limits) as app:
        app.extensions["services"].rooms.configure("hall", {"capacity": 1})
        app.extensions["services"].rooms.configure("list", {"kind": "waitlist"})
        app.extensions["services"].admins.add("ada", PASSWORD)
        yield app


def api_join(app: Flask, address: str, key: str = "") -> Any:
    headers = {"Idempotency-Key": key} if key else {}
    return app.test_client().post(
        "/api/rooms/hall/join", json={}, headers=headers, environ_base={"REMOTE_ADDR": address}
    )


def test_an_address_gets_its_limit_then_429_with_retry_after(app: Flask) -> None:
    """3 joins a minute from one address, then 429 with Retry-After; another network is
    not affected."""
    assert [api_join(app, "192.0.2.1").status_code for _ in range(4)] == [200] * 3 + [429]
    refused = api_join(app, "192.0.2.1")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "too many joins from your address" in refused.get_json()["error"]
    assert api_join(app, "198.51.100.1").status_code == 200


def test_a_network_gets_its_limit(app: Flask) -> None:
    """A /24 shares 5 joins a minute, whatever its addresses; a /64 likewise."""
    codes = [api_join(app, f"203.0.113.{i}").status_code for i in range(1, 8)]
    assert codes == [200] * 5 + [429] * 2
    six = [api_join(app, f"2001:db8:1:2::{i}").status_code for i in range(1, 8)]
    assert six == [200] * 5 + [429] * 2
    assert api_join(app, "2001:db8:1:3::1").status_code == 200


def test_an_idempotent_rejoin_is_not_counted(app: Flask) -> None:
    """The same Idempotency-Key again (its ticket live) is free; a browser's second
    press of the join button too."""
    for _ in range(10):
        assert api_join(app, "192.0.2.7", key="k-1").status_code == 200
    visitor = Visitor(app.test_client()).named("Ann")
    for _ in range(6):
        assert visitor.join("hall").status_code == 200


def test_a_browser_is_told_on_a_friendly_page(app: Flask) -> None:
    """Beyond the limit a browser's join gets the 429 page in words, with Retry-After."""
    for i in range(3):
        Visitor(app.test_client()).named(f"P{i}").join("hall")
    late = Visitor(app.test_client()).named("Late")
    reply = late.client.post("/rooms/hall/join", data={"csrf_token": late.csrf()})
    assert reply.status_code == 429 and "Retry-After" in reply.headers
    page = reply.get_data(as_text=True)
    assert "Too many joins" in page and "share a network" in page
    assert 'data-retry-after="' in page and 'action="http://localhost/rooms/hall/join"' in page


def test_waitlist_sign_ups_are_limited_per_address(app: Flask) -> None:
    """2 sign-ups an hour from one address (SIGNUP_LIMIT), then 429."""
    codes = []
    for i in range(3):
        visitor = Visitor(app.test_client())
        form = {"name": f"P{i}", "email": f"p{i}@example.org", "csrf_token": visitor.csrf()}
        codes.append(visitor.client.post("/rooms/list/signup", data=form).status_code)
    assert codes == [303, 303, 429]


def test_wrong_passwords_are_limited_per_account_and_in_all(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    """From many addresses: 4 wrong passwords for one account, then 429 for it; 6 in all;
    each wrong password logs one line and no traceback."""

    def login(name: str, password: str, address: str) -> int:
        client = app.test_client()
        page = client.get("/admin/login").get_data(as_text=True)
        token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        form = {"name": name, "password": password, "csrf_token": token}
        reply = client.post("/admin/login", data=form, environ_base={"REMOTE_ADDR": address})
        return reply.status_code

    with caplog.at_level(logging.INFO):
        first = login("ada", "wrong password", "192.0.2.1")
    lines = [r for r in caplog.records if "refused" in r.getMessage()]
    assert first == 401 and len(lines) == 1 and lines[0].exc_info is None
    codes = [login("ada", "wrong password", f"10.0.{i}.1") for i in range(4)]
    assert codes == [401, 401, 401, 429]
    others = [login(f"eve{i}", "wrong password", f"10.1.{i}.1") for i in range(3)]
    assert others == [401, 401, 429]  # 6 wrong in all


def test_a_refused_join_counts_against_no_limit(app: Flask) -> None:
    """Issue 29: joins refused for any reason (no such room, a bad email, a closed room,
    a puzzle not solved, a line too long) change nothing, the limits neither: the
    address still has its three joins a minute afterwards."""
    services = app.extensions["services"]
    client = app.test_client()
    ask = {"environ_base": {"REMOTE_ADDR": "192.0.2.9"}}
    assert client.post("/api/rooms/nowhere/join", json={}, **ask).status_code == 404
    for _ in range(3):
        bad = client.post("/api/rooms/hall/join", json={"email": "not an address"}, **ask)
        assert bad.status_code == 400
    services.visits.configure("hall", {"status": "closed"})
    assert api_join(app, "192.0.2.9").status_code == 409
    services.visits.configure("hall", {"status": "open", "challenge": "on"})
    refused = api_join(app, "192.0.2.9")
    assert refused.status_code == 403 and refused.get_json()["error"] == "challenge_required"
    services.visits.configure("hall", {"challenge": "off", "max_line_length": 1})
    api_join(app, "198.51.100.9")  # the one seat
    api_join(app, "198.51.100.10")  # the line's one place
    assert api_join(app, "192.0.2.9").status_code == 503
    services.visits.configure("hall", {"max_line_length": None})
    assert [api_join(app, "192.0.2.9").status_code for _ in range(4)] == [200] * 3 + [429]
