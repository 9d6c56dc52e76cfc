"""The lobby, identity and extras (issue 12, part C): room titles, the self-updating
lobby, changing one's name, moving a place to another device, plain error pages."""

from __future__ import annotations

import re
import time
from typing import Any

from flask import Flask

from webapp.domain.rooms import WaitingRooms

OPENS = 1_795_000_000  # 2026-11-18 11:06:40 UTC


def cards_order(text: str) -> list[str]:
    return re.findall(r"<h2 dir=\"auto\">([^<]+)</h2>", text)


def ticket_of(visitor: Any, room: str = "hall") -> str:
    with visitor.client.session_transaction() as session:
        return str(session["tickets"][room])


def test_lobby_sorts_open_first_and_shows_titles(visitor: Any, make_room: Any) -> None:
    """Open rooms come first, then paused, then closed; by title within; text escaped."""
    make_room("zeta", status="closed", title="Archive")
    make_room("alpha", status="paused", title="Book club", opens_at=OPENS)
    make_room("beta", title="Concert <b>hall</b>", description="Doors at 8 & later")
    make_room("gamma", title="")
    text = visitor.get("/").get_data(as_text=True)
    assert cards_order(text) == ["Concert &lt;b&gt;hall&lt;/b&gt;", "gamma", "Book club", "Archive"]
    assert "Doors at 8 &amp; later" in text and "<b>hall</b>" not in text
    assert 'datetime="2026-11-18T11:06:40Z"' in text
    assert "11:06\u202fAM UTC on November 18, 2026" in text  # as the locale writes it
    assert "Pick a name first" in text and text.count("Pick a name") <= 2  # said once
    assert "You only do this once" not in text


def test_paused_room_with_free_seats_does_not_say_enter(make_visitor: Any, make_room: Any) -> None:
    """A paused room's card offers the line and says why, never "Enter"."""
    make_room("hall", capacity=5, status="paused")
    text = make_visitor("Ann").get("/").get_data(as_text=True)
    assert "Paused: nobody is let in right now" in text
    assert "Join the line" in text and ">Enter<" not in text


def test_closed_room_card_shows_no_seats_to_the_visitor_without_a_place(
    make_visitor: Any, make_room: Any
) -> None:
    """A closed room's seats are no one's to take: its card says why and shows no seat
    figures, except to someone who holds a place there."""
    make_room("hall", capacity=5)
    ann, bo = make_visitor("Ann"), make_visitor("Bo")
    ann.join("hall")
    make_room("hall", status="closed")  # a change of settings: Ann keeps her seat
    card = bo.get("/").get_data(as_text=True)
    assert "Closed: this room takes no new visitors" in card and "Seats taken" not in card
    mine = ann.get("/").get_data(as_text=True)
    assert "Seats taken" in mine and "You hold a seat here." in mine


def test_waitlist_card_says_join_the_waitlist(make_visitor: Any, make_room: Any) -> None:
    """A waitlist room's card links to its sign-up page."""
    make_room("list", kind="waitlist")
    text = make_visitor("Ann").get("/").get_data(as_text=True)
    assert "Join the waitlist" in text and 'href="/rooms/list"' in text


def test_lobby_poll_answers_the_cards_alone(make_visitor: Any, make_room: Any) -> None:
    """The lobby polls itself: an htmx request gets the room cards, not the page."""
    make_room("hall")
    ann = make_visitor("Ann")
    text = ann.get("/", htmx=True).get_data(as_text=True)
    assert text.lstrip().startswith('<div id="room-cards"') and "<html" not in text
    assert 'hx-trigger="every 5s"' in text and "hall" in text


def test_room_pages_show_title_and_description(make_visitor: Any, make_room: Any) -> None:
    """The waiting page and the room page carry the room's title and description."""
    make_room("hall", capacity=1, title="Main hall", description="Be kind")
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    for page in (ann.join("hall"), bob.join("hall")):
        text = page.get_data(as_text=True)
        assert 'class="room-name">Main hall<' in text and "Be kind" in text  # in the h1
        assert ">hall<" not in text  # the address is not shown as a second name


def test_favicon(visitor: Any) -> None:
    """/favicon.ico leads to a small SVG icon, and every page links it."""
    reply = visitor.get("/favicon.ico")
    assert reply.status_code == 301 and reply.headers["Location"].endswith("/favicon.svg")
    with visitor.get(reply.headers["Location"]) as icon:
        assert icon.status_code == 200 and b"<svg" in icon.get_data()
    assert 'rel="icon"' in visitor.get("/").get_data(as_text=True)


def test_name_change_reaches_the_room(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """A name changed from the header is on the visitor's ticket from then on."""
    make_room("hall", capacity=1)
    ann = make_visitor("Ann")
    ann.join("hall")
    page = ann.join("hall").get_data(as_text=True)
    assert "New display name" in page and 'name="next" value="/rooms/hall"' in page
    token = ann.csrf("/rooms/hall")
    refused = ann.client.post("/name", data={"name": "Annie", "next": "/rooms/hall"})
    assert refused.status_code == 400
    assert [p.name for p in reports.participants("hall")] == ["Ann"]
    reply = ann.client.post(
        "/name", data={"name": "Annie", "next": "/rooms/hall", "csrf_token": token}
    )
    assert reply.status_code == 303 and reply.headers["Location"] == "/rooms/hall"
    assert [p.name for p in reports.participants("hall")] == ["Annie"]
    assert "<strong>Annie</strong>" in ann.get("/").get_data(as_text=True)


def test_place_moves_to_another_browser_once(
    make_visitor: Any, make_room: Any, visitor: Any, engine: WaitingRooms, reports
) -> None:
    """The link moves the place (same number, same ticket); the old tab is told; a
    second use is refused and changes nothing."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    ticket = ticket_of(bob)
    assert "Continue on another device" in bob.join("hall").get_data(as_text=True)
    offer = bob.get("/rooms/hall/move").get_data(as_text=True)
    assert "<svg" in offer and "works once" in offer
    link = re.search(r'value="(http://localhost/move/[^"]+)"', offer)
    assert link is not None
    path = link.group(1).removeprefix("http://localhost")
    confirm = visitor.get(path).get_data(as_text=True)  # a new browser, no name yet
    assert "Move your place here?" in confirm
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', confirm)
    assert csrf is not None
    taken = visitor.client.post(path, data={"csrf_token": csrf.group(1)})
    assert taken.status_code == 303 and taken.headers["Location"] == "/rooms/hall"
    assert ticket_of(visitor) == ticket
    visitor.named("Bob on the phone")
    page = visitor.join("hall").get_data(as_text=True)
    assert "Number 1 in line" in page and ticket_of(visitor) == ticket
    assert reports.ticket_state("hall", ticket) == "waiting"
    told = bob.get("/rooms/hall/line", htmx=True).get_data(as_text=True)
    assert "Your place moved to another device" in told and "hx-get" not in told
    reload = bob.get("/rooms/hall/line")  # its other pages are told too, never joined
    assert reload.status_code == 410 and "moved to another device" in reload.get_data(as_text=True)
    assert "Join the line here instead" in reload.get_data(as_text=True)
    again = visitor.client.post(path, data={"csrf_token": csrf.group(1)})
    assert again.status_code == 410 and "already used" in again.get_data(as_text=True)
    assert visitor.get("/rooms/hall/line", htmx=True).status_code == 200
    assert "Number 1" in visitor.join("hall").get_data(as_text=True)
    api = visitor.get(f"/api/rooms/hall/position/{ticket}")  # the API token still works
    assert api.status_code == 200 and api.get_json()["position"] == 1


def test_expired_or_tampered_link_changes_nothing(
    app: Flask, make_visitor: Any, make_room: Any, visitor: Any
) -> None:
    """A link older than 10 minutes, or altered, gets a clear page; the place stays."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    offer = bob.get("/rooms/hall/move").get_data(as_text=True)
    match = re.search(r'value="http://localhost(/move/[^"]+)"', offer)
    assert match is not None
    path = match.group(1)
    tampered = visitor.get(path[:-3] + "abc")
    assert tampered.status_code == 400 and "not valid" in tampered.get_data(as_text=True)
    moves = app.extensions["services"].moves
    moves.clock = lambda: time.time() + 601
    expired = visitor.get(path)
    assert expired.status_code == 410 and "has expired" in expired.get_data(as_text=True)
    csrf = visitor.csrf("/")
    assert visitor.client.post(path, data={"csrf_token": csrf}).status_code == 410
    text = bob.get("/rooms/hall/line", htmx=True).get_data(as_text=True)
    assert "Your place moved" not in text and "hx-get" in text


def test_error_pages_speak_plainly(make_visitor: Any, make_room: Any) -> None:
    """No status number in the title, no code quotes; a closed room says when it opens."""
    ann = make_visitor("Ann")
    missing = ann.join("nope").get_data(as_text=True)
    assert "<title>We could not find that room · Waiting room</title>" in missing
    assert "'nope'" not in missing and "Pick a room from the lobby." in missing
    make_room("hall", status="closed", opens_at=OPENS)
    closed = ann.join("hall").get_data(as_text=True)
    assert "<title>This room is closed · Waiting room</title>" in closed
    assert "It opens again at" in closed and "11:06\u202fAM UTC on November 18, 2026" in closed
    assert not re.search(r"<title>\d", ann.get("/nothing-here").get_data(as_text=True))


def test_line_too_long_counts_down(make_visitor: Any, make_room: Any) -> None:
    """The refusal gives one message, its Retry-After for the countdown and a retry link."""
    make_room("hall", capacity=1, max_line_length=1, typical_stay_seconds=None)
    make_visitor("Ann").join("hall")
    make_visitor("Bob").join("hall")
    text = make_visitor("Cy").join("hall").get_data(as_text=True)
    assert 'data-retry-after="60"' in text and "Try again now" in text
    assert text.count("too long") == 2  # the title and the heading
