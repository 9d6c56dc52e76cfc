"""One place per person in the browser (issue 29): the site sends its signed-in
customer to ``/rooms/<room>?identity=<token>``; the join button then holds that
customer's one place, on any device; a room that requires it says, in words, to come
from the site, with a link to it; a bad token's page says the link is no longer valid."""

from __future__ import annotations

import re
from typing import Any

import jwt
import pytest

from tests.web.conftest import Visitor

SITE = "http://shop.test/"
SECRET = "the shop's identity secret, 32+ characters long"


@pytest.fixture
def shop(make_room: Any) -> str:
    make_room("shop", capacity=1, site_url=SITE, identity="required", identity_secret=SECRET)
    return "shop"


def token(clock: Any, sub: str, jti: str) -> str:
    claims = {"sub": sub, "aud": "shop", "exp": int(clock()) + 300, "jti": jti}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def press_join(visitor: Visitor, query: str = "") -> Any:
    """The site's link (with its query), then the room's one button."""
    card = visitor.get(f"/rooms/shop{query}").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', card)
    assert csrf
    return visitor.client.post("/rooms/shop/join", data={"csrf_token": csrf.group(1)})


@pytest.fixture
def app(clocked_app: Any) -> Any:
    return clocked_app


def test_the_sites_link_joins_the_customers_one_place(app: Any, shop: str, clock: Any) -> None:
    """Two browsers of one customer, each with its own token from the site: one ticket."""
    phone, laptop = Visitor(app.test_client()), Visitor(app.test_client())
    assert press_join(phone, f"?identity={token(clock, 'c-1', 'a')}").status_code == 303
    assert press_join(laptop, f"?identity={token(clock, 'c-1', 'b')}").status_code == 303
    with phone.client.session_transaction() as one, laptop.client.session_transaction() as two:
        assert one["tickets"]["shop"] == two["tickets"]["shop"]
    assert app.extensions["services"].reports.summary("shop").active == 1


def test_without_the_sites_link_the_page_says_to_come_from_the_site(app: Any, shop: str) -> None:
    """The room's page offers no join, only the site's link; a join sent anyway is 401
    with the same words."""
    card = Visitor(app.test_client()).get("/rooms/shop").get_data(as_text=True)
    assert 'id="join"' not in card and "sign in on the site" in card
    assert f'href="{SITE}"' in card
    reply = press_join(Visitor(app.test_client()))
    assert reply.status_code == 401
    page = reply.get_data(as_text=True)
    assert "Join from the site" in page and f'href="{SITE}"' in page
    assert app.extensions["services"].reports.summary("shop").active == 0


def test_a_used_link_says_it_is_no_longer_valid(app: Any, shop: str, clock: Any) -> None:
    once = token(clock, "c-2", "once")
    assert press_join(Visitor(app.test_client()), f"?identity={once}").status_code == 303
    again = press_join(Visitor(app.test_client()), f"?identity={once}")
    assert again.status_code == 401
    assert "not valid any more" in again.get_data(as_text=True)
