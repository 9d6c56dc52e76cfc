"""Straight through, or straight in line (issue 30), through Debian's nginx and Caddy
configured from docs/gate.md as pasted (tests/proxies.py), in Chromium.

With a free seat and nobody waiting, a fresh browser opening the shop reaches the
site's page with no click and no waiting page shown (the gate seats it and answers 204
with the pass). With the room full, a second browser is in line within 2 s, with no
click. ``bypass_paths`` lets /robots.txt through without a pass; the room's page answers
JSON to ``Accept: application/json``. Screenshots of the gated flow (390 and 1280 px)
go to /work/shots/i30-gate/ when /work/shots exists (``SHOTS_TAG``: a prefix for them).
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gunicorn_app import ARTIFACTS, free_port
from playwright.sync_api import expect
from proxies import Site, doc_blocks, fetch, gated_site, run_nginx

pytestmark = pytest.mark.e2e

SHOTS = Path("/work/shots/i30-gate") if Path("/work/shots").is_dir() else ARTIFACTS / "i30-gate"
TAG = os.environ.get("SHOTS_TAG", "after")
WIDTHS = (390, 1280)


class Gated(Site):
    def room(self, **settings: Any) -> None:
        """The site room "shop" of the doc, made afresh, its settings seen by every worker."""
        with contextlib.suppress(urllib.error.HTTPError):  # 404: none yet
            self.server.delete("shop")
        self.server.admin("shop", site_url=f"{self.url}/", **settings)
        time.sleep(1.1)  # every worker's cached settings (STATS_REFRESH) are the new room's


@pytest.fixture(scope="module", params=["nginx", "caddy"])
def gated(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Gated]:
    kind = request.param
    with gated_site(kind, redis_url, f"e2e-straight-in-{kind}.log") as site:
        gated = Gated(kind, site.url, site.server, site.app, site.origin)
        warm_up(gated)
        yield gated


def warm_up(gated: Gated) -> None:
    """Each worker's first join through the waiting page loads its scripts and compiles
    its templates (a second or more on a busy machine): done once in a room of its own,
    so the timed visits measure what every later visitor gets."""
    gated.server.admin("warm", capacity=1, site_url=f"{gated.url}/")
    gated.server.api("POST", "/api/rooms/warm/join")
    for _ in range(6):
        assert fetch(f"{gated.url}/queue/rooms/warm?next=/x")[0] == 200


def shoot(page: Any, kind: str, name: str) -> None:
    """One set of screenshots (nginx's: the pages are the same through either proxy)."""
    if kind != "nginx":
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"]
    page.screenshot(path=str(SHOTS / f"{TAG}-{name}-{width}.png"), full_page=True)


@pytest.mark.parametrize("width", WIDTHS)
def test_straight_through_then_straight_in_line(gated: Gated, person: Any, width: int) -> None:
    """A free seat: A opens the shop and is on its page, no waiting page on the way, no
    click. The room full: B is in line within 2 s of opening the shop, no click."""
    gated.room(capacity=1, dropout_seconds=10, typical_stay_seconds=60)
    a, b = person(width=width, height=844), person(width=width, height=844)
    seen: list[str] = []
    a.on("framenavigated", lambda frame: seen.append(frame.url) if frame == a.main_frame else None)

    a.goto(f"{gated.url}/shop/item")
    shoot(a, gated.kind, "1-free-seat")
    expect(a).to_have_url(f"{gated.url}/shop/item")
    expect(a.get_by_role("heading", name="Origin page /shop/item")).to_be_visible()
    assert not [url for url in seen if "/queue/" in url], seen  # no waiting page shown
    assert re.fullmatch(r"[0-9a-f]{12}", a.locator("#visitor").inner_text())
    a.goto(f"{gated.url}/shop/other")  # the pass came back in Set-Cookie: no second seat
    expect(a.get_by_role("heading", name="Origin page /shop/other")).to_be_visible()

    started = time.monotonic()
    b.goto(f"{gated.url}/shop/item", wait_until="commit")  # the waiting page's answer
    in_line = time.monotonic() - started
    expect(b.locator(".position .big")).to_have_text("1")
    expect(b).to_have_url(re.compile(r"/queue/rooms/shop\?next=/shop/item$"))
    shoot(b, gated.kind, "2-full-room")
    assert in_line < 2.0, in_line
    summary = gated.server.api("GET", "/api/rooms/shop/qsize")
    assert summary == {"len": 1, "active": 1, "capacity": 1}


def test_bypass_paths(gated: Gated) -> None:
    """bypass_paths: /robots.txt passes without a pass, and takes no seat, in a full room;
    a page of the site does not, nor a path that only looks like one after a dot
    segment; nginx's answer cache (docs/gate.md) keeps no such 204 for others."""
    gated.room(capacity=1, bypass_paths="/robots.txt\n/shop/open/*")
    gated.server.api("POST", "/api/rooms/shop/join")  # the one seat taken
    assert fetch(f"{gated.url}/robots.txt")[0] == 200
    assert fetch(f"{gated.url}/shop/open/a/b")[0] == 200
    assert fetch(f"{gated.url}/shop/item")[0] == 302
    assert fetch(f"{gated.url}/shop/open/../item")[0] in (302, 400)
    assert fetch(f"{gated.url}/shop/open/%2e%2e/item")[0] in (302, 400)
    if gated.kind == "nginx":
        listen = free_port()
        with run_nginx(doc_blocks("nginx")[1], listen, gated.app, gated.origin):
            assert fetch(f"http://127.0.0.1:{listen}/robots.txt")[0] == 200
            assert fetch(f"http://127.0.0.1:{listen}/shop/item")[0] == 302
    assert gated.server.api("GET", "/api/rooms/shop/qsize")["active"] == 1


def test_json_mode(gated: Gated) -> None:
    """Through the proxy, the room's page answers a JSON client with its standing (the
    position API's reply) once the gate's link put it in line, and a JSON 404 without
    a place."""
    gated.room(capacity=1)
    gated.server.api("POST", "/api/rooms/shop/join")  # full: the next one waits
    status, _, body = fetch(f"{gated.url}/queue/rooms/shop", {"Accept": "application/json"})
    assert status == 404 and "error" in json.loads(body)
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{gated.url}/shop/item", timeout=10) as reply:  # to the waiting page
        assert reply.status == 200 and "/queue/rooms/shop?next=" in reply.url
    asked = urllib.request.Request(
        f"{gated.url}/queue/rooms/shop", headers={"Accept": "application/json"}
    )
    with opener.open(asked, timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("application/json")
        standing = json.loads(reply.read())
    assert standing["status"] == "waiting" and standing["position"] == 1
    assert standing["capacity"] == 1 and standing["token"]


def test_a_puzzle_room_solves_then_joins_with_no_click(gated: Gated, person: Any) -> None:
    """A full room that asks for the puzzle: the gate's link solves it in the page and
    puts the visitor in line, with no click."""
    if gated.kind != "nginx":
        pytest.skip("the page is the same through either proxy")
    gated.room(capacity=1)
    gated.server.api("POST", "/api/rooms/shop/join")  # the seat, before the puzzle is on
    gated.server.admin("shop", challenge="on", challenge_cost=100)
    time.sleep(1.1)  # every worker's cached settings ask for the puzzle
    b = person(width=390, height=844)
    b.goto(f"{gated.url}/shop/item")
    expect(b.locator(".position .big")).to_have_text("1", timeout=15_000)
    assert gated.server.api("GET", "/api/rooms/shop/qsize")["len"] == 1
