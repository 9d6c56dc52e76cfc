"""A frozen Redis holds a panel request at most one timeout (issue 25, hole 5): the
panel session's failed read answers the request, nothing asks Redis again."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from faultkit import RedisServer

from webapp import create_app

pytestmark = [pytest.mark.faults]
PASSWORD = "correct horse battery"
TIMEOUT = 1.0  # WEBAPP_REDIS_SOCKET_TIMEOUT's default


def test_a_frozen_redis_holds_a_panel_request_one_timeout() -> None:
    """Logged in, Redis frozen: /admin/ and a room's panel page answer 503 within one
    socket timeout (plus slack), not two."""
    directory = Path(tempfile.mkdtemp(prefix="wr-frozen-panel-"))
    server = RedisServer(directory)
    server.start()
    try:
        app = create_app({"REDIS_URL": server.url, "SECRET_KEY": "s", "SWEEP_INTERVAL": 0,
                          "TESTING": True, "DATA_DIR": str(directory),
                          "WTF_CSRF_ENABLED": False})  # fmt: skip
        app.extensions["services"].admins.add("ada", PASSWORD)
        app.extensions["services"].rooms.configure("hall", {"capacity": 1})
        client = app.test_client()
        login = client.post("/admin/login", data={"name": "ada", "password": PASSWORD})
        assert login.status_code == 303
        for path in ("/admin/", "/admin/rooms/hall"):
            with server.frozen_while():
                began = time.monotonic()
                reply = client.get(path)
                took = time.monotonic() - began
            assert reply.status_code == 503
            assert took < TIMEOUT * 1.5, f"{path} waited {took:.2f} s"
        app.extensions["services"].stop()
        app.extensions["services"].client.connection_pool.disconnect()
    finally:
        server.stop()
