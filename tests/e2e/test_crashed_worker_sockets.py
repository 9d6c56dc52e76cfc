"""A worker that crashes (issue 25, hole 4), under gunicorn with 2 workers: a visitor
at the socket cap (5) whose tabs were on it reconnects them at once, on the other
worker, instead of being refused with 4008 until the dead worker's count lapses."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Any

import pytest
import redis
import websocket
from gunicorn_app import e2e_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PREFIX = "e2ecrash"


def open_socket(server: Any, cookie: str, room: str) -> websocket.WebSocket:
    url = server.url.replace("http://", "ws://") + f"/rooms/{room}/ws"
    return websocket.create_connection(url, header=[f"Cookie: {cookie}"], origin=server.url,
                                       timeout=10)  # fmt: skip


def closed_with(sock: websocket.WebSocket) -> int | None:
    """The close code if the server closes the socket within a second, else None."""
    sock.settimeout(1.0)
    try:
        while True:
            opcode, data = sock.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                return int.from_bytes(data[:2], "big")
    except websocket.WebSocketTimeoutException:
        return None


def test_a_dead_workers_sockets_stop_counting_when_the_visitor_reconnects(redis_url: str):
    with e2e_server(redis_url, "e2e-crash.log", prefix=PREFIX) as server:
        server.admin("hall", capacity=5)
        ann = server.visitor("Ann")
        ann.join("hall")
        cookie = ann.cookie()
        sockets = []
        for _ in range(5):
            sock = open_socket(server, cookie, "hall")
            assert closed_with(sock) is None
            sockets.append(sock)
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        [conns] = client.keys(f"{PREFIX}:{{user:*}}:conns")
        held = {server_id: int(n) for server_id, n in client.hgetall(conns).items()}
        assert sum(held.values()) == 5
        victim = max(held, key=lambda s: held[s])  # the worker holding most of them
        os.kill(int(victim.split(":")[1]), signal.SIGKILL)
        began = time.monotonic()
        deadline = began + 20
        while client.get(f"{PREFIX}:server:{victim.rsplit(':', 1)[0]}:alive") is not None:
            assert time.monotonic() < deadline, "the master never counted the worker out"
            time.sleep(0.1)
        # The tabs on the dead worker reconnect (the page does so within seconds)
        for _ in range(held[victim]):
            sock = open_socket(server, cookie, "hall")
            assert closed_with(sock) is None, "refused: the dead worker's sockets still count"
            sockets.append(sock)
        assert time.monotonic() - began < 15  # well inside the 30 s connection TTL
        extra = open_socket(server, cookie, "hall")  # the cap still holds: a 6th is refused
        assert closed_with(extra) == 4008
        for sock in [*sockets, extra]:
            # close() may fail on a socket whose worker died; shutdown() always frees it
            with contextlib.suppress(websocket.WebSocketException, OSError):
                sock.close(timeout=1)
            sock.shutdown()
        client.close()
