"""Hostile input, wrong credentials, secrets as text, probes and timeouts (issue 10)."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from webapp import create_app
from webapp.config import ConfigError

HOSTILE_BODIES = [
    b"[" * 1000 + b"]" * 1000,
    b'{"name": ' + b"[" * 100 + b"]" * 100 + b"}",
    b'{"name": "\\ud800"}',
    b'{"name": "\xed\xa0\x80"}',  # a surrogate encoded as bytes: not UTF-8
    b'{"capacity": 1e400}',
    b"\xff\xfe",
]


@pytest.mark.parametrize("body", HOSTILE_BODIES)
def test_hostile_json_gets_a_400_and_changes_nothing(client, make_room, admin, body):
    """Deep nesting, lone surrogates, huge numbers, bad bytes: a clear 400, no state."""
    make_room("lobby", capacity=5)
    for method, path in [("POST", "/api/rooms/lobby/join"), ("PUT", "/api/admin/rooms/lobby")]:
        response = client.open(path, method=method, data=body, headers=admin,
                               content_type="application/json")  # fmt: skip
        assert response.status_code == 400, (path, response.get_data()[:200])
        assert "JSON object" in response.get_json()["error"]
    assert client.get("/api/rooms/lobby/qsize").get_json() == {"len": 0, "active": 0, "capacity": 5}


def test_huge_integers_are_refused_as_settings(client, make_room, admin):
    """A number past 64 bits is no capacity."""
    make_room("lobby", capacity=5)
    body = b'{"capacity": 123456789012345678901234567890}'
    response = client.put("/api/admin/rooms/lobby", data=body, headers=admin,
                          content_type="application/json")  # fmt: skip
    assert response.status_code == 400
    assert client.get("/api/admin/rooms/lobby", headers=admin).get_json()["capacity"] == 5


@pytest.fixture
def throttled_app(redis_url, r, tmp_path):
    return create_app(
        {
            "REDIS_URL": redis_url,
            "ADMIN_TOKEN": "the-right-admin-token",
            "SECRET_KEY": "test-secret",
            "SWEEP_INTERVAL": 0,
            "DATA_DIR": str(tmp_path),
            "TESTING": True,
        }
    )


def test_wrong_admin_tokens_are_throttled_per_address(throttled_app, caplog):
    """Ten wrong tokens in 15 minutes are answered 401; then 429 with Retry-After, even
    for the right token (else a guess could still be tested); each failure is logged."""
    client = throttled_app.test_client()
    wrong = {"Authorization": "Bearer wrong-admin-token-guess"}
    right = {"Authorization": "Bearer the-right-admin-token"}
    assert client.get("/api/admin/rooms/x", headers=right).status_code == 404  # not counted
    with caplog.at_level(logging.WARNING, logger="webapp.web.security"):
        for _ in range(10):
            assert client.get("/api/admin/rooms/x", headers=wrong).status_code == 401
    assert sum("refused an admin token from 127.0.0.1" in m for m in caplog.messages) == 10
    for headers in (wrong, right, {}):
        response = client.put("/api/admin/rooms/x", json={}, headers=headers)
        assert response.status_code == 429
        assert response.is_json and "try again later" in response.get_json()["error"]
        assert 800 < int(response.headers["Retry-After"]) <= 901
    elsewhere = throttled_app.test_client()
    other = elsewhere.get("/api/admin/rooms/x", headers=right,
                          environ_overrides={"REMOTE_ADDR": "127.0.0.2"})  # fmt: skip
    assert other.status_code == 404  # another address is not held back


def test_secrets_are_read_as_text(monkeypatch, redis_url, r, tmp_path):
    """WEBAPP_ADMIN_TOKEN and WEBAPP_SECRET_KEY are taken exactly as given, never as JSON."""
    monkeypatch.setenv("WEBAPP_ADMIN_TOKEN", "12345678901234567890")
    monkeypatch.setenv("WEBAPP_SECRET_KEY", "null")
    app = create_app({"REDIS_URL": redis_url, "SWEEP_INTERVAL": 0, "DATA_DIR": str(tmp_path)})
    assert app.config["ADMIN_TOKEN"] == "12345678901234567890"
    assert app.config["SECRET_KEY"] == "null"
    bearer = {"Authorization": "Bearer 12345678901234567890"}
    assert app.test_client().get("/api/admin/rooms/x", headers=bearer).status_code == 404


@pytest.mark.parametrize("token", ["1e3", "null", "short-token-15ch"[:15]])
def test_a_short_admin_token_refuses_to_start(monkeypatch, redis_url, tmp_path, token):
    """A token under 16 characters stops the app with a message saying so."""
    monkeypatch.setenv("WEBAPP_ADMIN_TOKEN", token)
    with pytest.raises(ConfigError, match="at least 16"):
        create_app({"REDIS_URL": redis_url, "SWEEP_INTERVAL": 0, "DATA_DIR": str(tmp_path)})


@pytest.mark.parametrize(
    ("name", "value"),
    [("JOIN_LIMIT", "lots"), ("JOIN_NETWORK_LIMIT", "20 per minute;5 per hour"),
     ("SIGNUP_LIMIT", ""), ("ADMIN_TOTAL_LIMIT", "10 per fortnight")],
)  # fmt: skip
def test_a_limit_that_cannot_be_read_refuses_to_start(
    monkeypatch, redis_url, tmp_path, name, value
):
    """A join limit is one limit ("20 per minute"), an admin limit one or several: a
    value that is neither stops the app with a message naming the setting."""
    monkeypatch.setenv(f"WEBAPP_{name}", value)
    with pytest.raises(ConfigError, match=f"WEBAPP_{name} is .*not a limit"):
        create_app({"REDIS_URL": redis_url, "SWEEP_INTERVAL": 0, "DATA_DIR": str(tmp_path)})


def test_probes_answer_ok(client):
    """/healthz needs no Redis; /readyz made a Lua round trip on it."""
    assert client.get("/healthz").get_json() == {"status": "ok"}
    response = client.get("/readyz")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}


def test_readyz_survives_a_script_flush(client, r):
    """Redis lost its scripts: the probe loads them again and passes."""
    r.script_flush()
    assert client.get("/readyz").status_code == 200


@pytest.fixture
def frozen_redis():
    """A TCP peer that accepts connections and never answers, as a frozen Redis does."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


def test_a_frozen_redis_answers_503_within_two_seconds(frozen_redis, tmp_path):
    """Every call to a Redis that never answers ends within the timeouts: a 503 in < 2 s."""
    app = create_app({"REDIS_URL": frozen_redis, "SECRET_KEY": "x", "SWEEP_INTERVAL": 0,
                      "CHAT_UPKEEP_SECONDS": 0, "DATA_DIR": str(tmp_path)})  # fmt: skip
    client = app.test_client()
    for path in ("/readyz", "/api/rooms", "/api/rooms/lobby/qsize", "/"):
        started = time.monotonic()
        response = client.get(path)
        assert response.status_code == 503, path
        assert time.monotonic() - started < 2.0, path
    assert "unreachable" in client.get("/readyz").get_json()["reason"]
    assert client.get("/healthz").status_code == 200


def test_hsts_only_behind_https(redis_url, r, tmp_path):
    """Strict-Transport-Security is sent when the session cookie is marked secure."""
    base = {"REDIS_URL": redis_url, "SECRET_KEY": "x", "SWEEP_INTERVAL": 0,
            "DATA_DIR": str(tmp_path)}  # fmt: skip
    plain = create_app(base).test_client().get("/healthz")
    assert "Strict-Transport-Security" not in plain.headers
    secure = create_app({**base, "SESSION_COOKIE_SECURE": True}).test_client().get("/healthz")
    assert secure.headers["Strict-Transport-Security"].startswith("max-age=")
