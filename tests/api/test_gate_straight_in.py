"""The gate seats a visitor without a pass when it can (issue 30), and lets the room's
``bypass_paths`` through, through the app on real Redis with the test clock."""

from __future__ import annotations

import jwt
import pytest

from tests.api.conftest import ADMIN, api_app
from webapp.domain.passes import new_private_pem

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
SITE = "https://shop.example/"
PUBLIC = "https://shop.example/queue"
KEY = new_private_pem()


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return api_app(redis_url, clock, tmp_path, PUBLIC_URL=PUBLIC, PASS_KEY=KEY)


def site_room(client, name="shop", **settings):
    settings = {"capacity": 1, "site_url": SITE} | settings
    reply = client.put(f"/api/admin/rooms/{name}", json=settings, headers=ADMIN)
    assert reply.status_code in (200, 201), reply.get_json()
    return name


def gate(client, room="shop", cookie=None, uri="/shop/item"):
    if cookie is not None:
        client.set_cookie(f"wr_pass_{room}", cookie)
    else:
        client.delete_cookie(f"wr_pass_{room}")
    return client.get(f"/gate/{room}", headers={"X-Original-URI": uri})


def held(client, room="shop"):
    return client.get(f"/api/rooms/{room}/qsize").get_json()


def the_pass(reply):
    """The pass in the gate's Set-Cookie (one header, as nginx's auth_request_set reads)."""
    cookies = reply.headers.getlist("Set-Cookie")
    assert len(cookies) == 1, cookies
    name, _, rest = cookies[0].partition("=")
    assert name.startswith("wr_pass_") and "HttpOnly" in rest
    return rest.split(";")[0]


def test_a_free_seat_is_taken_at_the_gate(client, r):
    """No pass, a free seat, nobody waiting: 204, the seat's pass in Set-Cookie, the
    visitor named; the pass holds at the next check; it counts as an admission."""
    site_room(client, capacity=2)
    reply = gate(client)
    assert reply.status_code == 204
    fresh = the_pass(reply)
    claims = jwt.decode(fresh, options={"verify_signature": False})
    assert reply.headers["X-Waiting-Room-Visitor"] == claims["sub"]
    assert reply.headers["Cache-Control"] == "no-store"
    assert held(client) == {"len": 0, "active": 1, "capacity": 2}
    again = gate(client, cookie=fresh)
    assert again.status_code == 204 and "Set-Cookie" not in again.headers
    assert held(client)["active"] == 1  # the pass came back: no second seat
    audit = client.get("/api/admin/rooms/shop/audit?kind=admit", headers=ADMIN).get_json()
    assert [(entry["kind"], entry["detail"]) for entry in audit] == [("admit", "direct")]
    history = r.hgetall(next(r.scan_iter("*{room:shop}:history")))
    assert sum(int(v) for k, v in history.items() if k.endswith(":admitted")) == 1


def test_a_full_room_sends_to_the_waiting_page(client):
    """No free seat: the 401 names the waiting page, and nothing joins."""
    site_room(client)
    assert gate(client).status_code == 204
    reply = gate(client)
    assert reply.status_code == 401
    assert reply.headers["X-Waiting-Room-Location"] == f"{PUBLIC}/rooms/shop?next=/shop/item"
    assert "Set-Cookie" not in reply.headers
    assert held(client) == {"len": 0, "active": 1, "capacity": 1}


@pytest.mark.parametrize(
    "settings",
    [
        {"challenge": "on"},
        {"identity": "required", "identity_secret": "s" * 32},
        {"status": "paused"},
        {"admission_mode": "manual"},
    ],
    ids=["puzzle", "identity", "paused", "manual"],
)
def test_no_seat_at_the_gate_when_the_room_asks_more(client, settings):
    """A room that asks for a puzzle or its site's customer, or lets nobody in by
    itself: the gate seats nobody, and nobody joins."""
    site_room(client, capacity=3, **settings)
    assert gate(client).status_code == 401
    assert held(client) == {"len": 0, "active": 0, "capacity": 3}


def test_a_chat_room_seats_nobody_at_the_gate(client):
    """A room without site_url has no gate of its own to pass."""
    client.put("/api/admin/rooms/chat", json={"capacity": 3}, headers=ADMIN)
    assert gate(client, "chat").status_code == 401
    assert held(client, "chat")["active"] == 0


def test_admit_per_minute_holds_at_the_gate(client, clock):
    """admit_per_minute counts the gate's admissions: one a minute, then the line."""
    clock.now = 1_700_000_000 - 1_700_000_000 % 60  # the start of a clock minute
    site_room(client, capacity=3, admit_per_minute=1)
    assert gate(client).status_code == 204
    assert gate(client).status_code == 401
    clock.advance(61)
    assert gate(client).status_code == 204
    assert held(client)["active"] == 2


def test_a_full_room_is_remembered_a_moment(client, clock):
    """Found full, a room's gate tries no join for a second (a crowd without passes
    costs no join each), then takes the seat that freed up."""
    site_room(client)
    first = the_pass(gate(client))
    assert gate(client).status_code == 401
    release = client.post("/api/rooms/shop/release", headers={"Authorization": f"Bearer {first}"})
    assert release.get_json()["released"] is True
    assert gate(client).status_code == 401  # within the second: not tried
    clock.advance(1.1)
    assert gate(client).status_code == 204


def test_the_join_limits_hold_at_the_gate(redis_url, r, clock, tmp_path):
    """The gate's joins count against the address's join limit; a refused one does not."""
    app = api_app(redis_url, clock, tmp_path, PUBLIC_URL=PUBLIC, PASS_KEY=KEY,
                  JOIN_LIMIT="2 per minute")  # fmt: skip
    client = app.test_client()
    site_room(client, capacity=5)
    assert [gate(client).status_code for _ in range(3)] == [204, 204, 401]
    assert held(client)["active"] == 2


def test_a_prequeue_is_not_joined_at_the_gate(client, clock):
    """In a drop's pre-queue the gate seats nobody and puts nobody in the pre-queue."""
    now = int(clock())
    site_room(client, capacity=5, prequeue_at=now - 60, starts_at=now + 3600)
    assert gate(client).status_code == 401
    summary = client.get("/api/rooms").get_json()[0]
    assert summary["active"] == 0 and summary["waiting"] == 0


def test_bypass_paths_pass_without_a_pass(client):
    """A path of bypass_paths gets 204 without a pass, takes no seat, in a full room;
    other paths, and paths that only look like one, do not."""
    site_room(client, bypass_paths="/robots.txt\n/static/*  /healthz")
    assert gate(client).status_code == 204  # the one seat
    for uri in ("/robots.txt", "/static/site.css", "/static/a/b.js?v=2", "/healthz"):
        reply = gate(client, uri=uri)
        assert reply.status_code == 204, uri
        assert "Set-Cookie" not in reply.headers
        assert reply.headers["Cache-Control"] == "no-store"  # no cache keeps it for others
    caddy = client.get("/gate/shop", headers={"X-Forwarded-Uri": "/robots.txt"})
    assert caddy.status_code == 204
    for uri in ("/robots.txt.bak", "/static", "/static/../checkout", "/static/%2e%2e/checkout",
                "/static//x", "/shop/item", "/static/%2E%2E%2Fcheckout"):  # fmt: skip
        assert gate(client, uri=uri).status_code == 401, uri
    assert held(client)["active"] == 1


@pytest.mark.parametrize(
    "value",
    ["robots.txt", "/a b", "/a?b=1", "/*", "*", "/static/../x", "//x", "/a%20b",
     "\n".join(f"/p{i}" for i in range(51)), ["/robots.txt"]],
)  # fmt: skip
def test_bad_bypass_paths_are_refused(client, value):
    """Patterns that are not plain paths, or let everything through: 400, naming them."""
    site_room(client)
    reply = client.put("/api/admin/rooms/shop", json={"bypass_paths": value}, headers=ADMIN)
    assert reply.status_code == 400
    assert "bypass_paths" in reply.get_json()["error"]


def test_bypass_paths_are_kept(client):
    """Good patterns are stored trimmed and answered as set."""
    site_room(client)
    value = " /robots.txt\n/static/*\n"
    reply = client.put("/api/admin/rooms/shop", json={"bypass_paths": value}, headers=ADMIN)
    assert reply.status_code == 200
    assert reply.get_json()["bypass_paths"] == "/robots.txt\n/static/*"


@pytest.mark.parametrize(
    "headers",
    [{"Sec-Fetch-Dest": "image"}, {"Sec-Fetch-Dest": "style"}, {"Sec-Purpose": "prefetch"},
     {"Purpose": "prefetch"}, {"Sec-Fetch-Dest": "document", "Sec-Purpose": "prefetch;prerender"}],
)  # fmt: skip
def test_no_seat_for_a_favicon_or_a_prefetch(client, headers):
    """A browser's request for an image or a stylesheet, or a prefetch, takes no seat;
    a page (document), a page's own request (empty) and a client naming none do."""
    site_room(client, capacity=5)
    reply = client.get("/gate/shop", headers={"X-Original-URI": "/favicon.ico", **headers})
    assert reply.status_code == 401
    assert held(client)["active"] == 0
    for dest in ("document", "empty"):
        client.delete_cookie("wr_pass_shop")
        assert client.get("/gate/shop", headers={"Sec-Fetch-Dest": dest}).status_code == 204
    assert held(client)["active"] == 2
