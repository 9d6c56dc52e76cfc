"""Limits that must hold across gunicorn's workers (2 here), counted in Redis."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any

import pytest

pytestmark = pytest.mark.e2e


def call(
    server: Any, method: str, path: str, token: str, source: str = "127.0.0.1", body: Any = None
) -> tuple[int, dict[str, str], Any]:
    """One request on a new connection (so the kernel hands it to either worker), from
    the loopback address ``source``."""
    url = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=5,
                                      source_address=(source, 0))  # fmt: skip
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders()), json.loads(reply.read() or b"null")
    finally:
        conn.close()


def test_wrong_admin_tokens_are_throttled_across_workers(server):
    """Ten wrong tokens from one address, whichever worker served them: the next is 429."""
    source = "127.0.0.2"  # its own address: the other tests' admin calls stay unthrottled
    for _ in range(10):
        status, _, _ = call(server, "GET", "/api/admin/rooms/x", "wrong-token-wrong-token", source)
        assert status == 401
    for _ in range(4):  # several connections: both workers refuse
        status, headers, body = call(server, "GET", "/api/admin/rooms/x", server.admin_token,
                                     source)  # fmt: skip
        assert status == 429 and int(headers["Retry-After"]) > 0 and body["error"]
    assert "refused an admin token from 127.0.0.2" in server.log.read_text()
    assert call(server, "GET", "/api/admin/rooms/x", server.admin_token)[0] == 404


def test_a_settings_change_reaches_every_worker_at_once(server, room):
    """Right after an admin shortens dropout_seconds (and max_checkin_seconds, the window
    of those far back: issue 26), every poll, on either worker, asks to be polled within
    half of it."""
    name = room(capacity=1, dropout_seconds=600)
    tokens = [server.api("POST", f"/api/rooms/{name}/join")["token"] for _ in range(30)]
    far = tokens[-1]
    for _ in range(6):  # both workers cache the room's settings
        assert server.api("GET", f"/api/rooms/{name}/position/{far}")["poll_after"] > 10
    server.admin(name, dropout_seconds=8, max_checkin_seconds=8)
    for _ in range(10):
        assert server.api("GET", f"/api/rooms/{name}/position/{far}")["poll_after"] <= 4
