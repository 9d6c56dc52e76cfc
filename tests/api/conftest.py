"""An app on the session's Redis with a test clock, and a client that speaks the API."""

from __future__ import annotations

import pytest
from flask import Flask, request

from webapp import create_app

ADMIN = {"Authorization": "Bearer test-admin-token"}


def api_app(redis_url, clock, tmp_path, **extra):
    """An app for API tests on the test's Redis and clock, with the throttles opened wide
    (generated requests send many wrong tokens and join many times from one address; the
    limits have their own tests); ``extra`` adds or replaces settings."""
    return create_app(
        {
            "REDIS_URL": redis_url,
            "ADMIN_TOKEN": "test-admin-token",
            "SECRET_KEY": "test-secret",
            "SWEEP_INTERVAL": 0,
            "STATS_REFRESH": 0,
            "DATA_DIR": str(tmp_path),
            "CLOCK": clock,
            "TESTING": True,
            "ADMIN_FAILURE_LIMIT": "100000 per minute",
            "JOIN_LIMIT": "100000 per minute",
            "JOIN_NETWORK_LIMIT": "100000 per minute",
            "SIGNUP_LIMIT": "100000 per minute",
            **extra,
        }
    )


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return api_app(redis_url, clock, tmp_path)


@pytest.fixture
def admin():
    """Headers that carry the admin token."""
    return dict(ADMIN)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def make_room(client):
    def make(name="lobby", **settings):
        settings.setdefault("capacity", 1)
        response = client.put(f"/api/admin/rooms/{name}", json=settings, headers=ADMIN)
        assert response.status_code in (200, 201), response.get_json()
        return name

    return make


def flask_requests(app: Flask) -> list[str]:
    """The requests Flask's own handling sees from now on ("POST /path"; its
    before-request hooks run), for tests of what the lean WSGI paths answer without it.
    Call it before the app's first request."""
    seen: list[str] = []

    @app.before_request
    def record() -> None:
        seen.append(f"{request.method} {request.path}")

    return seen


@pytest.fixture
def flask_saw(app: Flask) -> list[str]:
    return flask_requests(app)
