"""A site room's pages (issue 23): the waiting page hands out the pass and sends the
visitor to ``next`` on the site (never elsewhere); a visitor whose seat ended sees why;
the panel shows who is on the site; and the app mounted under a path prefix
(X-Forwarded-Prefix) builds every URL with it."""

from __future__ import annotations

import re
from typing import Any

import jwt
import pytest

from tests.web.conftest import Visitor, running_app

SITE = "http://shop.test/"


@pytest.fixture
def shop(make_room: Any) -> str:
    make_room("shop", capacity=1, site_url=SITE, dropout_seconds=60)
    return "shop"


def enter(visitor: Visitor, next_path: str | None = "/shop/item") -> Any:
    """The gate's link, which puts the visitor in line at once (issue 30): its answer;
    without ``next``, the room's card and its join button, then the room's page."""
    if next_path is not None:
        return visitor.get(f"/rooms/shop?next={next_path}")
    card = visitor.get("/rooms/shop")
    assert card.status_code == 200
    assert 'name="name"' not in card.get_data(as_text=True)  # a site room asks no name
    token = re.search(r'name="csrf_token" value="([^"]+)"', card.get_data(as_text=True))
    assert token
    joined = visitor.client.post("/rooms/shop/join", data={"csrf_token": token.group(1)})
    assert joined.status_code == 303
    return visitor.get("/rooms/shop")


def pass_of(reply: Any) -> str:
    cookie = reply.headers["Set-Cookie"]
    assert cookie.startswith("wr_pass_shop=") and "HttpOnly" in cookie
    return str(cookie.split(";")[0].split("=", 1)[1])


def test_admitted_visitor_goes_to_next_with_a_pass(app, visitor, shop):
    """A free seat: the room's page sets the pass cookie and sends the visitor to the
    page the gate sent them from, on the site."""
    reply = enter(visitor)
    assert reply.status_code == 303
    assert reply.headers["Location"] == "http://shop.test/shop/item"
    claims = jwt.decode(pass_of(reply), options={"verify_signature": False})
    assert claims["aud"] == "shop"
    assert (
        app.test_client()
        .get("/gate/shop", headers={"Authorization": f"Bearer {pass_of(reply)}"})
        .status_code
        == 204
    )


@pytest.mark.parametrize(
    "wanted",
    ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"],
)
def test_next_elsewhere_lands_on_the_site(visitor, shop, wanted):
    """next naming another host (or no path at all) goes to site_url: no open redirect."""
    reply = enter(visitor, wanted)
    assert reply.headers["Location"] == SITE


def test_waiting_visitor_is_sent_when_admitted(app, make_visitor, visitor, shop, visits):
    """B waits at place 1; when A's seat is released, B's page goes to the site."""
    first = enter(visitor)
    second = Visitor(app.test_client())
    waiting = enter(second, "/shop/cart")
    assert waiting.status_code == 200 and "waiting" in waiting.get_data(as_text=True).lower()
    assert "takes you on to the site" in waiting.get_data(as_text=True)  # not "takes you in"
    held = app.extensions["services"].passes.verify(
        "shop", pass_of(first), app.extensions["services"].clock()
    )
    visits.release("shop", held.token)
    poll = second.get("/rooms/shop")
    assert poll.status_code == 303 and poll.headers["Location"] == "http://shop.test/shop/cart"
    assert pass_of(poll)


def test_released_visitor_sees_why(app, visitor, shop, visits):
    """After the site released the seat, the gate's link shows the ended page: the visit
    is over, with Join again."""
    first = enter(visitor)
    held = app.extensions["services"].passes.verify(
        "shop", pass_of(first), app.extensions["services"].clock()
    )
    visits.release("shop", held.token)
    page = visitor.get("/rooms/shop?next=/shop/item")
    text = page.get_data(as_text=True)
    assert page.status_code == 200  # the room's page is there: it says what became of the place
    assert "the site let you go" in text
    assert "Join again" in text


def test_panel_shows_on_the_site(panel_app, shop):
    """The panel's seats say "On the site" and when the visitor was last seen."""
    from tests.web.conftest import PASSWORD

    services = panel_app.extensions["services"]
    services.visits.join("shop", identity="visitor:x", name="Ada")
    admin = panel_app.test_client()
    login = admin.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', login)
    assert csrf
    admin.post(
        "/admin/login", data={"name": "ada", "password": PASSWORD, "csrf_token": csrf.group(1)}
    )
    page = admin.get("/admin/rooms/shop").get_data(as_text=True)
    assert "On the site" in page and "last seen 0 s ago" in page


URL_ATTRS = re.compile(r'(?:href|src|action|hx-get|hx-post|data-ws|data-ended|data-go)="([^"]*)"')


def urls_in(page: str) -> list[str]:
    return [u for u in URL_ATTRS.findall(page) if u.startswith("/")]


def test_every_url_honours_the_prefix(redis_url, r):
    """Behind a proxy (PROXY_COUNT) that sends X-Forwarded-Prefix: /queue, every link,
    asset, form, htmx request and websocket URL of the pages starts with /queue, and the
    redirects too."""
    prefixed = {"X-Forwarded-Prefix": "/queue", "X-Forwarded-Host": "shop.test"}
    with running_app(redis_url, PROXY_COUNT=1) as app:
        services = app.extensions["services"]
        services.rooms.configure("chat", {"capacity": 1})
        services.rooms.configure("site", {"capacity": 1, "site_url": SITE})
        visitor = app.test_client()
        pages = [visitor.get("/", headers=prefixed), visitor.get("/rooms/chat", headers=prefixed)]
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', pages[-1].get_data(as_text=True))
        assert csrf
        named = visitor.post(
            "/name",
            data={"name": "Ada", "next": "/rooms/chat", "csrf_token": csrf.group(1)},
            headers=prefixed,
        )
        assert named.headers["Location"].startswith("/queue/rooms/chat")
        joined = visitor.post(
            "/rooms/chat/join", data={"csrf_token": csrf.group(1)}, headers=prefixed
        )
        assert joined.headers["Location"].startswith("/queue/")
        pages.append(visitor.get("/rooms/chat", headers=prefixed))  # the room, its socket
        other = app.test_client()
        other.post("/name", data={"name": "Bo", "csrf_token": csrf.group(1)}, headers=prefixed)
        pages.append(other.get("/rooms/chat", headers=prefixed))
        token = re.search(r'name="csrf_token" value="([^"]+)"', pages[-1].get_data(as_text=True))
        assert token
        other.post("/rooms/chat/join", data={"csrf_token": token.group(1)}, headers=prefixed)
        pages.append(other.get("/rooms/chat", headers=prefixed))  # the waiting page
        pages.append(other.get("/rooms/site", headers=prefixed))  # its card
        checked = 0
        for page in pages:
            assert page.status_code == 200
            for url in urls_in(page.get_data(as_text=True)):
                assert url.startswith("/queue/"), url
                checked += 1
        assert 'data-ws="/queue/rooms/chat/ws"' in pages[2].get_data(as_text=True)
        assert checked > 40


def test_a_site_rooms_forms_may_lead_to_its_site_only(app, visitor, shop, make_room):
    """The join of a site room ends on the site (another origin): the page's policy lets
    its forms go there, and nowhere else; other rooms' pages keep forms to this site."""
    policy = visitor.client.get("/rooms/shop").headers["Content-Security-Policy"]
    assert "form-action 'self' http://shop.test;" in policy
    make_room("chat", capacity=1)
    policy = visitor.client.get("/rooms/chat").headers["Content-Security-Policy"]
    assert "form-action 'self';" in policy
