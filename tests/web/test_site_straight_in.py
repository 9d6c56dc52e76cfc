"""A site room's page for a visitor the gate sent (issue 30): in line at once, without a
button (a puzzle solved by the page first); chat rooms keep their one button; and the
room's page in JSON mode."""

from __future__ import annotations

from typing import Any

import pytest

from tests.web.conftest import Visitor

SITE = "http://shop.test/"
JSON = {"Accept": "application/json"}


@pytest.fixture
def full_shop(make_room: Any, visits: Any) -> str:
    """A site room whose one seat is taken."""
    make_room("shop", capacity=1, site_url=SITE, dropout_seconds=60)
    visits.join("shop", identity="someone")
    return "shop"


def waiting(reports: Any, room: str = "shop") -> int:
    summary = reports.summary(room)
    assert summary is not None
    return int(summary.waiting)


def test_the_gate_link_puts_the_visitor_in_line(visitor, full_shop, reports):
    """A full site room: the gate's link shows the waiting page at place 1, joined with
    no button; a reload shows the same place, and joins nobody else."""
    page = visitor.get("/rooms/shop?next=/shop/item")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert 'class="position"' in text and "takes you on to the site" in text
    assert waiting(reports) == 1
    again = visitor.get("/rooms/shop?next=/shop/item")
    assert again.status_code == 200 and 'class="position"' in again.get_data(as_text=True)
    assert waiting(reports) == 1


def test_without_next_the_card_waits_for_the_button(visitor, full_shop, reports):
    """The room's page without the gate's next: its card and one button; nobody joins."""
    page = visitor.get("/rooms/shop")
    assert 'id="join"' in page.get_data(as_text=True)
    assert waiting(reports) == 0


def test_a_chat_room_keeps_its_button(visitor, make_room, reports):
    """A chat room's page joins nobody, next or not."""
    make_room("chat", capacity=1)
    visitor.named("Ada")
    page = visitor.get("/rooms/chat?next=/x")
    assert 'id="join"' in page.get_data(as_text=True)
    assert waiting(reports, "chat") == 0 and reports.summary("chat").active == 0


def test_after_leaving_the_gate_link_does_not_join_again(visitor, full_shop, reports):
    """Left the line: Back to the gate's link shows the ended place, with Join again."""
    visitor.get("/rooms/shop?next=/shop/item")
    assert visitor.leave("shop").status_code in (200, 303)
    assert waiting(reports) == 0
    page = visitor.get("/rooms/shop?next=/shop/item")
    assert 'data-why="left"' in page.get_data(as_text=True)
    assert waiting(reports) == 0


def test_a_puzzle_room_solves_first(visitor, make_room, visits, reports):
    """A room that asks for a puzzle: the card that solves it and joins by itself
    (data-join-now), nobody in line yet; without next, the card that waits."""
    make_room("shop", capacity=1, site_url=SITE, challenge="on")
    visits.join("shop", identity="someone")
    text = visitor.get("/rooms/shop?next=/shop/item").get_data(as_text=True)
    assert "data-challenge=" in text and "data-join-now" in text
    assert waiting(reports) == 0
    assert "data-join-now" not in visitor.get("/rooms/shop").get_data(as_text=True)


def test_a_room_for_customers_asks_for_the_site(visitor, make_room, visits, reports):
    """identity required and no token: the card that sends the visitor to the site."""
    make_room("shop", capacity=1, site_url=SITE, identity="required", identity_secret="s" * 32)
    text = visitor.get("/rooms/shop?next=/shop/item").get_data(as_text=True)
    assert 'class="from-site"' in text
    assert waiting(reports) == 0 and reports.summary("shop").active == 0


def test_json_mode(visitor, full_shop, app):
    """Accept: application/json: the visitor's standing as the position API answers it;
    a browser's Accept gets the page; no place is a JSON 404, an ended one a 410."""
    none = visitor.client.get("/rooms/shop", headers=JSON)
    assert none.status_code == 404 and none.is_json and "error" in none.get_json()
    visitor.get("/rooms/shop?next=/shop/item")
    reply = visitor.client.get("/rooms/shop", headers=JSON)
    assert reply.status_code == 200 and reply.is_json
    assert "Accept" in reply.headers["Vary"]
    body = reply.get_json()
    api = app.test_client().get(f"/api/rooms/shop/position/{body['token']}").get_json()
    assert set(body) == set(api)
    assert body["status"] == "waiting" and body["position"] == 1
    assert reply.headers["X-Poll-After-Seconds"]
    page = visitor.client.get("/rooms/shop", headers={"Accept": "text/html,*/*;q=0.8"})
    assert page.mimetype == "text/html" and "Accept" in page.headers["Vary"]
    visitor.leave("shop")
    gone = visitor.client.get("/rooms/shop", headers=JSON)
    assert gone.status_code == 410 and "error" in gone.get_json()
    missing = visitor.client.get("/rooms/nowhere", headers=JSON)
    assert missing.status_code == 404 and missing.is_json


def test_json_mode_of_a_seat_carries_the_pass(make_room, app):
    """A seated visitor of a site room: status admitted, with the pass and the site."""
    make_room("shop", capacity=1, site_url=SITE)
    visitor = Visitor(app.test_client())
    assert visitor.get("/rooms/shop?next=/shop/item").status_code == 303  # a free seat
    body = visitor.client.get("/rooms/shop", headers=JSON).get_json()
    assert body["status"] == "admitted" and body["pass"] and body["site_url"] == SITE


def test_a_favicon_sent_on_from_the_gate_joins_nobody(visitor, full_shop, reports):
    """The gate's link followed by an image's fetch (the site's favicon, redirected) or
    a prefetch shows the card and joins nobody; a page's navigation joins."""
    for headers in ({"Sec-Fetch-Dest": "image"}, {"Sec-Purpose": "prefetch"}):
        visitor.client.get("/rooms/shop?next=/favicon.ico", headers=headers)
        assert waiting(reports) == 0
    nav = {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}
    visitor.client.get("/rooms/shop?next=/shop/item", headers=nav)
    assert waiting(reports) == 1
