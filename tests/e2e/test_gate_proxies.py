"""A site behind Debian's nginx and Caddy, gated by a room (issue 23), in Chromium.

Each proxy runs the configuration of docs/gate.md as pasted (tests/proxies.py replaces
only ports and scratch paths), in front of a small origin site (tests/site_origin.py)
and the app under gunicorn with 2 workers, mounted under /queue/. Capacity 1: A goes
straight onto /shop/item (the gate seats A: issue 30); B is put in line at place 1 with
no click; the origin releases A's pass at checkout; B is on /shop/item within 2 s; A's
next request puts A in line. Screenshots of every page a
gated visitor sees (390 px) go to /work/shots/gate/ when that directory's parent exists,
else artifacts/gate/.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import tempfile
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gunicorn_app import ARTIFACTS, free_port
from playwright.sync_api import expect
from proxies import Site, doc_blocks, fetch, gated_site, run_nginx

pytestmark = pytest.mark.e2e

SHOTS = Path("/work/shots/gate") if Path("/work/shots").is_dir() else ARTIFACTS / "gate"
PHONE = 390


class Gated(Site):
    key_file: Path  # where the shop's checkout reads its site key

    def room(self, **settings: Any) -> str:
        """A site room of its own, named as in the doc ("shop"), on this server's own
        Redis prefix; emptied first."""
        with contextlib.suppress(urllib.error.HTTPError):  # 404: none yet
            self.server.delete("shop")
        self.server.admin("shop", site_url=f"{self.url}/", **settings)
        self.key_file.write_text(self.server.site_key("shop"))  # the shop's checkout reads it
        return "shop"


@pytest.fixture(scope="module", params=["nginx", "caddy"])
def gated(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Gated]:
    kind = request.param
    key_file = Path(tempfile.mkdtemp(prefix="wr-site-key-")) / "site-key"
    with gated_site(kind, redis_url, f"e2e-gate-{kind}.log", str(key_file)) as site:
        gated = Gated(kind, site.url, site.server, site.app, site.origin)
        gated.key_file = key_file
        yield gated
    shutil.rmtree(key_file.parent, ignore_errors=True)


def shoot(page: Any, kind: str, name: str) -> None:
    if kind != "nginx":  # one set: the pages are the same through either proxy
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-{PHONE}.png"), full_page=True)


def into_the_line(page: Any, gated: Gated) -> None:
    """Opens /shop/item in a full room: the gate sends the visitor to the room's page,
    which puts them in line with no click."""
    page.goto(f"{gated.url}/shop/item")
    expect(page).to_have_url(re.compile(r"/queue/rooms/shop\?next=/shop/item$"))


def test_two_visitors_one_seat(gated: Gated, person: Any) -> None:
    """A gets in, B waits at place 1, A's checkout releases the seat, B is on the
    site within 2 s, A's next request puts A in line."""
    gated.room(capacity=1, dropout_seconds=10, typical_stay_seconds=60)
    a, b = person(width=PHONE, height=844), person(width=PHONE, height=844)

    a.goto(f"{gated.url}/shop/item")  # a free seat: taken at the gate
    expect(a).to_have_url(f"{gated.url}/shop/item")
    expect(a.get_by_role("heading", name="Origin page /shop/item")).to_be_visible()
    shoot(a, gated.kind, "3-on-the-site")
    assert re.fullmatch(r"[0-9a-f]{12}", a.locator("#visitor").inner_text())

    into_the_line(b, gated)
    expect(b.locator(".position .big")).to_have_text("1")
    shoot(b, gated.kind, "2-waiting")

    # B's page asks for the site when it hears of the seat: that moment is what the 2 s
    # bound is about; the page's load through the proxy may take longer on a loaded machine
    went: list[float] = []
    item = f"{gated.url}/shop/item"
    b.on("request", lambda r: went.append(time.monotonic()) if r.url == item else None)
    a.goto(f"{gated.url}/shop/checkout")  # the origin releases A's pass, clears its cookie
    expect(a.locator("#released")).to_contain_text('"released":true')
    expect(a.locator("#released")).to_contain_text('"sold":1')  # with the shop's site key
    released = time.monotonic()
    expect(b).to_have_url(item)
    expect(b.get_by_role("heading", name="Origin page /shop/item")).to_be_visible()
    assert went and went[0] - released < 2.0, (went, released)

    # A's pass went with the checkout, and A never saw the waiting room: a new visitor,
    # put in line at once (B holds the seat)
    into_the_line(a, gated)
    expect(a.locator(".position .big")).to_have_text("1")


def test_static_assets_are_not_gated(gated: Gated) -> None:
    """/static/ passes without a pass; a page of the site does not (the room full)."""
    gated.room(capacity=1)
    gated.server.api("POST", "/api/rooms/shop/join")
    assert fetch(f"{gated.url}/static/site.css")[0] == 200
    status, headers, _ = fetch(f"{gated.url}/shop/item")
    assert status == 302
    assert headers["Location"] == f"{gated.url}/queue/rooms/shop?next=/shop/item"


def test_bad_passes_go_to_the_waiting_page(gated: Gated) -> None:
    """Through the proxy, a tampered pass and another room's pass are sent to the
    waiting page (the room full), a good one reaches the site."""
    gated.room(capacity=1)
    joined = gated.server.api("POST", "/api/rooms/shop/join")
    good = joined["pass"]
    head, claims, signature = good.split(".")
    # a pass whose claims were changed (a later expiry): neither its signature nor its
    # tag (the gate's check of a pass this deployment issued, ``wrt``) holds any more
    body = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    later = base64.urlsafe_b64encode(json.dumps(body | {"exp": body["exp"] + 3600}).encode())
    tampered = f"{head}.{later.decode().rstrip('=')}.{signature}"
    for bad in (tampered, "x.y.z"):
        status, _, _ = fetch(f"{gated.url}/shop/item", {"Cookie": f"wr_pass_shop={bad}"})
        assert status == 302
    status, _, body = fetch(f"{gated.url}/shop/item", {"Cookie": f"wr_pass_shop={good}"})
    assert status == 200 and "Origin page /shop/item" in body


def test_renewed_pass_reaches_the_browser(gated: Gated) -> None:
    """Past half its life, the gate's fresh pass comes back through the proxy in
    Set-Cookie (nginx: auth_request_set; Caddy: the handle_response)."""
    gated.room(capacity=5, pass_renew_seconds=5)
    time.sleep(1.1)  # every worker's cached settings (STATS_REFRESH) have the new room's
    good = gated.server.api("POST", "/api/rooms/shop/join")["pass"]
    time.sleep(5.2)
    status, headers, _ = fetch(f"{gated.url}/shop/item", {"Cookie": f"wr_pass_shop={good}"})
    assert status == 200
    cookie = headers.get("Set-Cookie", "")
    assert cookie.startswith("wr_pass_shop=") and "HttpOnly" in cookie, headers
    fresh = cookie.split(";")[0].split("=", 1)[1]
    assert fresh != good
    status, headers, _ = fetch(f"{gated.url}/shop/item", {"Cookie": f"wr_pass_shop={fresh}"})
    assert status == 200 and "Set-Cookie" not in headers


def test_the_waiting_room_under_the_prefix(gated: Gated) -> None:
    """The app's pages, assets and keys answer under /queue/ through the proxy."""
    gated.room(capacity=1)
    status, _, page = fetch(f"{gated.url}/queue/rooms/shop")
    assert status == 200
    assets = re.findall(r'(?:href|src)="(/queue/static/[^"]+)"', page)
    assert assets
    for asset in assets[:3]:
        assert fetch(f"{gated.url}{asset}")[0] == 200
    status, _, keys = fetch(f"{gated.url}/queue/.well-known/jwks.json")
    assert status == 200 and '"kty":"OKP"' in keys.replace(" ", "")


def gate_checks(gated: Gated) -> float:
    """How many requests the app's gate answered so far (its /metrics, every worker)."""
    _, _, text = fetch(
        f"{gated.server.url}/metrics", {"Authorization": f"Bearer {gated.server.admin_token}"}
    )
    counts = re.findall(
        r'_http_request_duration_seconds_count\{[^}]*endpoint="gate.check"[^}]*\} (\S+)', text
    )
    return sum(float(c) for c in counts)


def test_nginx_answer_cache(gated: Gated) -> None:
    """docs/gate.md's nginx configuration with the answer cache: twenty requests with
    one fresh pass ask the gate once; a request without a pass is never cached (the room
    full, so it is refused)."""
    if gated.kind != "nginx":
        pytest.skip("the answer cache is nginx's")
    gated.room(capacity=1)
    good = gated.server.api("POST", "/api/rooms/shop/join")["pass"]
    listen = free_port()
    with run_nginx(doc_blocks("nginx")[1], listen, gated.app, gated.origin):
        before = gate_checks(gated)
        for _ in range(20):
            status, _, _ = fetch(
                f"http://127.0.0.1:{listen}/shop/item", {"Cookie": f"wr_pass_shop={good}"}
            )
            assert status == 200
        assert gate_checks(gated) - before == 1
        for _ in range(3):
            assert fetch(f"http://127.0.0.1:{listen}/shop/item")[0] == 302
        assert gate_checks(gated) - before == 4


def test_the_sites_own_check_from_the_doc(gated: Gated) -> None:
    """docs/gate.md's Python snippet, as pasted (the address replaced), verifies a pass
    from the JWKS through the proxy, and refuses a tampered one and none."""
    gated.room(capacity=5)
    good = gated.server.api("POST", "/api/rooms/shop/join")["pass"]
    (snippet,) = [block for block in doc_blocks("python") if "def visitor_of" in block]
    assert "https://shop.example/queue" in snippet
    scope: dict[str, Any] = {}
    exec(snippet.replace("https://shop.example/queue", f"{gated.url}/queue"), scope)

    class Request:
        def __init__(self, cookie: str | None) -> None:
            self.cookies = {} if cookie is None else {"wr_pass_shop": cookie}

    claims = scope["visitor_of"](Request(good))
    assert claims["aud"] == "shop" and claims["iss"] == f"{gated.url}/queue"
    assert scope["visitor_of"](Request(good[:-3] + "AAA")) is None
    assert scope["visitor_of"](Request(None)) is None
