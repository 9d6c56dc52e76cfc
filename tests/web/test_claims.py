"""Claim links (issue 13, phase 2a): the GET shows a button and changes nothing; the
POST claims once; a reused, tampered or expired link gets a friendly page and changes
nothing."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.web.conftest import SECRET, Visitor
from webapp.domain.claims import sign_claim

ROOM = "list"
DAY = 24 * 3600


@pytest.fixture
def app(clocked_app: Flask) -> Flask:
    return clocked_app


@pytest.fixture
def admitted(app: Flask) -> str:
    """An admitted entry of the waitlist room; its id."""
    services = app.extensions["services"]
    services.rooms.configure(ROOM, {"kind": "waitlist"})
    entry = services.waitlists.join(ROOM, "Ada", "ada@example.org")
    services.waitlists.confirm(ROOM, entry.id)
    assert services.rooms.admit(ROOM, 1).tokens
    return str(entry.id)


def claimed(app: Flask) -> dict[str, str]:
    """What the app recorded as claimed: entry -> when."""
    services = app.extensions["services"]
    raw = services.client.hgetall(services.keys.claims(ROOM))
    text = [(k.decode(), v.decode()) if isinstance(k, bytes) else (k, v) for k, v in raw.items()]
    return dict(text)


def post(visitor: Visitor, path: str) -> Any:
    return visitor.client.post(path, data={"csrf_token": visitor.csrf("/")})


def test_the_claim_page_shows_a_button_and_claims_nothing(visitor, admitted, clock, app):
    """GET shows the confirmation with a POST button; nothing is claimed by it."""
    path = f"/claim/{sign_claim(SECRET, ROOM, admitted, clock(), DAY)}"
    page = visitor.get(path)
    assert page.status_code == 200
    assert 'method="post"' in page.get_data(as_text=True)
    assert claimed(app) == {}


def test_a_claim_admits_once(visitor, admitted, clock, app):
    """POST claims the place ('you're in'); the same link again is refused with 410."""
    path = f"/claim/{sign_claim(SECRET, ROOM, admitted, clock(), DAY)}"
    reply = post(visitor, path)
    assert reply.status_code == 200
    assert "You're in" in reply.get_data(as_text=True)
    before = claimed(app)
    assert list(before) == [admitted]
    assert post(visitor, path).status_code == 410
    assert visitor.get(path).status_code == 410
    assert claimed(app) == before


def test_a_claim_needs_the_csrf_token(visitor, admitted, clock, app):
    """A POST without the CSRF token claims nothing."""
    path = f"/claim/{sign_claim(SECRET, ROOM, admitted, clock(), DAY)}"
    assert visitor.client.post(path).status_code == 400
    assert claimed(app) == {}


def test_a_tampered_link_is_refused(visitor, admitted, clock, app):
    """A link signed with another key, or altered, gets 400 and changes nothing."""
    forged = sign_claim("another key", ROOM, admitted, clock(), DAY)
    token = sign_claim(SECRET, ROOM, admitted, clock(), DAY)
    for bad in (forged, token[:-2] + ("AA" if token[-2:] != "AA" else "BB")):
        assert visitor.get(f"/claim/{bad}").status_code == 400
        reply = post(visitor, f"/claim/{bad}")
        assert reply.status_code == 400
        assert "not one we sent" in reply.get_data(as_text=True)
    assert claimed(app) == {}


def test_an_expired_link_is_refused(visitor, admitted, clock, app):
    """After its window the link gets 410 and changes nothing."""
    path = f"/claim/{sign_claim(SECRET, ROOM, admitted, clock(), DAY)}"
    clock.advance(DAY + 1)
    assert visitor.get(path).status_code == 410
    reply = post(visitor, path)
    assert reply.status_code == 410
    assert "expired" in reply.get_data(as_text=True)
    assert claimed(app) == {}


def test_a_link_for_an_entry_not_admitted_is_refused(visitor, app, clock):
    """A genuine link for an entry still waiting claims nothing."""
    services = app.extensions["services"]
    services.rooms.configure(ROOM, {"kind": "waitlist"})
    entry = services.waitlists.join(ROOM, "Bo", "bo@example.org")
    path = f"/claim/{sign_claim(SECRET, ROOM, entry.id, clock(), DAY)}"
    assert post(visitor, path).status_code == 410
    assert claimed(app) == {}


def test_a_claim_goes_on_to_the_configured_page(visitor, admitted, clock, app):
    """With claim_redirect_url set, a successful claim answers 303 to it; a second try
    is refused as before."""
    services = app.extensions["services"]
    services.rooms.configure(ROOM, {"claim_redirect_url": "https://shop.example/welcome"})
    path = f"/claim/{sign_claim(SECRET, ROOM, admitted, clock(), DAY)}"
    reply = post(visitor, path)
    assert reply.status_code == 303
    assert reply.headers["Location"] == "https://shop.example/welcome"
    assert list(claimed(app)) == [admitted]
    assert post(visitor, path).status_code == 410


def test_a_lapsed_entrys_link_is_refused_as_expired(visitor, clock, app):
    """An admission not claimed within claim_seconds lapses: its link, even one signed
    for longer, gets the 'expired' page on GET and POST, before the sweep has come by
    and after, and claims nothing."""
    services = app.extensions["services"]
    services.rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": 3600})
    entry = services.waitlists.join(ROOM, "Ada", "ada@example.org")
    services.waitlists.confirm(ROOM, entry.id)
    assert services.rooms.admit(ROOM, 1).tokens
    path = f"/claim/{sign_claim(SECRET, ROOM, entry.id, clock(), DAY)}"
    clock.advance(3600)
    for turn in range(2):
        for page in (visitor.get(path), post(visitor, path)):
            assert page.status_code == 410
            assert "expired" in page.get_data(as_text=True)
        assert services.waitlists.sweep_turn(ROOM).lapsed == 1 - turn
    assert services.waitlists.position(ROOM, entry.id).state == "lapsed"
    assert claimed(app) == {}
