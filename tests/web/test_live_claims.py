"""The claim link of a live room's 'offered' email (issue 13): GET shows a button and
changes nothing; POST takes the offered seat once, for this browser, and sends it to the
room; reused, expired or tampered links are refused and change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask

from tests.conftest import FakeClock
from tests.web.conftest import SECRET, Visitor
from webapp.domain.claims import sign_claim

ROOM = "live"


@pytest.fixture
def app(clocked_app: Flask) -> Flask:
    return clocked_app


@pytest.fixture
def offered(app: Flask) -> str:
    """A ticket offered a seat in a live room, with an email; its token."""
    rooms = app.extensions["services"].rooms
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 60, "session_seconds": 600})
    first = rooms.join(ROOM, name="First")
    waiter = rooms.join(ROOM, identity="visitor:ada", name="Ada", email="ada@example.org")
    rooms.leave(ROOM, first.token)
    assert state(app, waiter.token) == "offered"
    return str(waiter.token)


def state(app: Flask, token: str) -> str:
    services = app.extensions["services"]
    raw = services.client.hget(services.keys.room(ROOM).tickets, token)
    return str(json.loads(raw)["st"])


def link(token: str, clock: FakeClock, seconds: float = 60) -> str:
    return f"/claim/{sign_claim(SECRET, ROOM, token, clock(), seconds, 'offered')}"


def post(visitor: Visitor, path: str) -> Any:
    return visitor.client.post(path, data={"csrf_token": visitor.csrf("/")})


def test_the_page_shows_a_button_and_takes_nothing(visitor, offered, clock, app):
    page = visitor.get(link(offered, clock))
    assert page.status_code == 200
    assert 'method="post"' in page.get_data(as_text=True)
    assert state(app, offered) == "offered"


def test_the_link_takes_the_seat_once_for_this_browser(visitor, offered, clock, app):
    path = link(offered, clock)
    reply = post(visitor, path)
    assert reply.status_code == 303
    assert reply.headers["Location"].endswith(f"/rooms/{ROOM}")
    assert state(app, offered) == "admitted"
    with visitor.client.session_transaction() as session:
        assert session.get("vid") != "visitor:ada"  # the one seat, not its identity
        assert ROOM in session["holders"]
    again = post(visitor, path)
    assert again.status_code == 410


def test_expired_and_tampered_links_change_nothing(visitor, offered, clock, app):
    expired = link(offered, clock, seconds=60)
    clock.advance(61)
    assert post(visitor, expired).status_code == 410
    assert post(visitor, link(offered, clock)[:-3] + "xyz").status_code == 400
    assert state(app, offered) == "offered"


def test_the_claim_page_names_the_room_by_its_title(visitor, offered, clock, app):
    """The email's link opens a page that says the room's title, not its address."""
    app.extensions["services"].rooms.configure(ROOM, {"title": "Sneaker drop"})
    page = visitor.get(link(offered, clock)).get_data(as_text=True)
    assert 'Your place in <span class="room-name">Sneaker drop</span> has come up' in page
    assert ">live<" not in page
