"""The gate gets every cookie of the site (issue 35): a busy shop's Cookie header passes
gunicorn's default 8 KB field limit, and its visitors must still get the gate's answer,
not 431. The limit is nginx's default total, 32 KB (docs/gate.md, "Header sizes")."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest
from gunicorn_app import Server

pytestmark = pytest.mark.e2e


def site_cookies(size: int) -> str:
    """A site's own cookies (a cart, analytics, consent), ``size`` bytes in all."""
    crumbs, n = [], 0
    while sum(len(c) + 2 for c in crumbs) < size:
        crumbs.append(f"shop_{n}=" + "v" * 200)
        n += 1
    return "; ".join(crumbs)[:size]


def gate(server: Server, room: str, cookie: str) -> tuple[int, dict[str, str]]:
    """The proxy's check of one request, as nginx's auth_request sends it."""
    request = urllib.request.Request(
        f"{server.url}/gate/{room}", headers={"Cookie": cookie, "X-Original-URI": "/cart"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, dict(reply.headers)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers)


def a_pass(server: Server, room: str) -> str:
    request = urllib.request.Request(f"{server.url}/api/rooms/{room}/join", data=b"")
    with urllib.request.urlopen(request, timeout=10) as reply:
        held: str = json.load(reply)["pass"]
        return held


@pytest.mark.parametrize("size", [12 * 1024, 30 * 1024])
def test_a_big_cookie_header_gets_the_gates_answer(
    server: Server, room: Callable[..., str], size: int
) -> None:
    """A Cookie header of 12 KB (and of 30 KB, near nginx's default total) under
    gunicorn: 204 with the pass among the site's cookies, 401 naming the waiting page
    without it; never 431."""
    # one seat, the pass's: without the pass the gate has no seat to give straight away
    name = room(capacity=1, site_url="https://shop.example/")
    cookies = site_cookies(size)
    held = a_pass(server, name)
    status, headers = gate(server, name, f"{cookies}; wr_pass_{name}={held}")
    assert status == 204
    assert headers["X-Waiting-Room-Visitor"]
    status, headers = gate(server, name, cookies)
    assert status == 401
    assert f"/rooms/{name}?next=" in headers["X-Waiting-Room-Location"]
