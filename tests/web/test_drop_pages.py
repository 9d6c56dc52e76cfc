"""A scheduled drop in the browser pages (issue 24): the join card before the
pre-queue (409 with a countdown), the pre-queue's waiting page with the draw id, the
place after the start, the draw page, stock warnings and the sold-out page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from flask import Flask

from tests.web.conftest import Visitor, running_app
from webapp.domain.tickets import public_id

T0 = 1_700_000_000


@pytest.fixture
def app(redis_url: str, r: redis.Redis, tmp_path: Any, clock: Any) -> Iterator[Flask]:
    with running_app(redis_url, DATA_DIR=str(tmp_path), CLOCK=clock) as app:
        yield app


@pytest.fixture
def visits(app: Flask) -> Any:
    return app.extensions["services"].visits


def person(app: Flask, name: str) -> Visitor:
    return Visitor(app.test_client()).named(name)


def test_before_the_prequeue_the_card_counts_down(app: Flask, visits: Any) -> None:
    """The room's page says when the pre-queue opens (a countdown), offers no join; a
    join anyway is a 409 page that says the same."""
    visits.configure("drop", {"capacity": 2, "prequeue_at": T0 + 60, "starts_at": T0 + 120})
    ada = person(app, "Ada")
    page = ada.get("/rooms/drop").get_data(as_text=True)
    assert "Not open yet" in page and "data-countdown" in page
    assert "The pre-queue opens at" in page and 'id="join"' not in page
    refused = ada.join("drop")
    assert refused.status_code == 409 and "Not open yet" in refused.get_data(as_text=True)
    assert "put in line by a draw anyone can check" in page  # the footer, not "first come"
    assert "A fair line, first come first served." not in page


def test_prequeue_page_then_the_place(app: Flask, visits: Any, clock: Any) -> None:
    """In the pre-queue the page shows no place, the start and the draw id; after the
    start its poll shows the place, and the draw page lists the draw id."""
    visits.configure("drop", {"capacity": 1, "prequeue_at": T0 + 60, "starts_at": T0 + 120})
    clock.advance(61)
    people = [person(app, f"P{i}") for i in range(3)]
    pages = [p.join("drop") for p in people]
    html = pages[0].get_data(as_text=True)
    assert "You are in the pre-queue" in html and 'id="draw-id"' in html
    card = person(app, "Newcomer").get("/rooms/drop").get_data(as_text=True)
    assert "Join the pre-queue" in card and "3 people are in the pre-queue" in card
    assert visits.start_drop("drop", who="ada") == 3
    shown = [p.get("/rooms/drop").get_data(as_text=True) for p in people]
    assert sum("your place in line" in s for s in shown) == 2
    draw = people[0].get("/rooms/drop/draw").get_data(as_text=True)
    assert "The seed, revealed at the start" in draw and 'id="mine"' in draw
    text = people[0].get("/rooms/drop/draw.txt").get_data(as_text=True).split()
    assert len(text) == 3 and all(len(i) == 12 for i in text)


def test_likely_to_sell_out_and_sold_out(app: Flask, visits: Any) -> None:
    """With 2 items left and 3 ahead, the waiting page warns; at 0 the waiting page
    shows the sell-out and the room's page refuses joins with a sold-out page (410)."""
    visits.configure("shop", {"capacity": 1, "stock": 2, "dropout_seconds": 600})
    people = [person(app, f"S{i}") for i in range(5)]
    for p in people:
        p.join("shop")
    last = people[-1].get("/rooms/shop").get_data(as_text=True)
    assert "Likely to sell out before your turn" in last and "2 items left" in last
    visits.record_sold("shop", 2, request_id="order-1")
    ended = people[-1].get("/rooms/shop").get_data(as_text=True)
    assert "sold out" in ended.lower()
    newcomer = person(app, "Late")
    assert "Sold out" in newcomer.get("/rooms/shop").get_data(as_text=True)
    refused = newcomer.join("shop")
    assert refused.status_code == 410 and "Sold out" in refused.get_data(as_text=True)


def test_draw_id_is_the_public_id(app: Flask, visits: Any, clock: Any) -> None:
    """The draw id on the waiting page is the ticket's public id."""
    visits.configure("drop", {"capacity": 1, "prequeue_at": T0 + 60, "starts_at": T0 + 120})
    clock.advance(61)
    ada = person(app, "Ada")
    html = ada.join("drop").get_data(as_text=True)
    prequeue = visits.rooms.keys.drop("drop").prequeue
    ids = [public_id(t) for t in visits.rooms.client.zrange(prequeue, 0, -1)]
    assert len(ids) == 1 and ids[0] in html


def test_the_lobby_shows_a_prequeued_place(app: Flask, visits: Any, clock: Any) -> None:
    """The lobby's places and room card say "in the pre-queue", not number 0."""
    visits.configure("drop", {"capacity": 1, "prequeue_at": T0 + 60, "starts_at": T0 + 120})
    clock.advance(61)
    ada = person(app, "Ada")
    ada.join("drop")
    lobby = ada.get("/").get_data(as_text=True)
    assert "you are in the pre-queue" in lobby and "You are in the pre-queue." in lobby
    assert "number 0" not in lobby


def test_the_lobby_card_tells_the_drops_times_and_joins_its_prequeue(
    app: Flask, visits: Any, clock: Any
) -> None:
    """A drop's card in the lobby: before its pre-queue opens, when it opens and when the
    sale starts, with nothing to join; while the pre-queue is open, "Join the pre-queue"
    (never "Enter" on a room whose seats nobody may take yet); after the start, the
    room's usual button."""
    visits.configure("drop", {"capacity": 2, "prequeue_at": T0 + 60, "starts_at": T0 + 120})
    ada = person(app, "Ada")
    page = ada.get("/").get_data(as_text=True)
    assert "The pre-queue opens at" in page and "The sale starts at" in page
    assert 'id="go-drop"' not in page
    clock.advance(61)
    page = ada.get("/").get_data(as_text=True)
    assert "The sale starts at" in page and "The pre-queue opens at" not in page
    assert "Join the pre-queue" in page and ">Enter<" not in page
    clock.advance(60)
    page = ada.get("/").get_data(as_text=True)
    assert "The sale starts at" not in page and ">Enter<" in page


def test_before_the_start_the_room_page_promises_no_wait(
    app: Flask, visits: Any, clock: Any
) -> None:
    """Before a drop's start its page tells no wait "if you join now" (the draw at the
    start gives each their place; the page counts down to it), even with measured stays
    and people already in the pre-queue."""
    visits.configure(
        "drop",
        {"capacity": 1, "prequeue_at": T0 - 60, "starts_at": T0 + 170, "typical_stay_seconds": 60},
    )
    for i in range(3):
        person(app, f"P{i}").join("drop")
    page = person(app, "Ada").get("/rooms/drop").get_data(as_text=True)
    assert "The sale starts at" in page
    assert "Estimated wait" not in page and "if you join now" not in page
