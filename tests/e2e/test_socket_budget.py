"""A room socket's frame budget and size (issue 25), under gunicorn: a flood gets an
error frame, then a 1008 close; a 70 KB frame gets a 1009 close frame, not a reset; a
page's own pace is never near the budget."""

from __future__ import annotations

import json
import time

import pytest
from test_chat_socket import Socket, count, seated, sockets  # noqa: F401  (a fixture)

pytestmark = pytest.mark.e2e


def test_a_flood_gets_an_error_frame_then_1008(server, room, sockets):  # noqa: F811
    """100 pings at once: at most the burst of 40 is answered, then an error frame and
    the close; the visitor's other socket and a new one still work."""
    name = room(capacity=5)
    ann = seated(server, name, "Ann")
    sock = Socket(server, ann, name)
    sockets.append(sock)
    for i in range(100):
        sock.ws.send(json.dumps({"type": "ping", "at": i}))
    code, reason = sock.close_frame(timeout=10)
    assert code == 1008 and "too many frames" in reason
    pongs = sum(f["type"] == "pong" for f in sock.frames)
    assert pongs <= 42
    calm = Socket(server, ann, name)  # a new socket has a new budget
    sockets.append(calm)
    for i in range(10):
        calm.ws.send(json.dumps({"type": "ping", "at": i}))
        time.sleep(0.06)
    assert len(calm.until(count("pong", 10))) >= 10


def test_a_70_kb_frame_gets_a_1009_close_frame(server, room, sockets):  # noqa: F811
    """The close frame arrives (the client reads it), not a connection reset."""
    name = room(capacity=5)
    sock = Socket(server, seated(server, name, "Bob"), name)
    sockets.append(sock)
    sock.ws.send(json.dumps({"type": "send", "text": "x" * 70_000}))
    code, reason = sock.close_frame(timeout=10)
    assert code == 1009 and "at most 16384 bytes" in reason
