"""A visitor's places across pages and tabs: kept alive by the lobby, never joined again
by a poll, and every ended one says why (issue 12, points 1 and 2)."""

from __future__ import annotations

import re
import time
from typing import Any

from webapp.domain.rooms import WaitingRooms

PUBLIC_ID = re.compile(r"[?&;]t=([0-9a-f]{12})")


def waiting(make_visitor: Any, make_room: Any, **settings: Any) -> tuple[Any, Any, str]:
    """Ann holds the only seat of hall; Bob waits first in line. Returns Bob's page's
    ticket id (the t of his waiting page's poll)."""
    make_room("hall", capacity=1, **settings)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    ann.join("hall")
    page = bob.join("hall").get_data(as_text=True)
    found = PUBLIC_ID.search(page)
    assert found, "the waiting page polls with its own ticket"
    return ann, bob, found.group(1)


def token_of(visitor: Any, room: str = "hall") -> str | None:
    with visitor.client.session_transaction() as session:
        token: str | None = session.get("tickets", {}).get(room)
        return token


def test_leaving_in_one_tab_ends_the_other_tabs_place(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """Bob leaves in one tab; his other tab's next poll shows why and joins nobody."""
    _, bob, mine = waiting(make_visitor, make_room)
    bob.client.post("/rooms/hall/leave", data={"csrf_token": bob.csrf()})
    poll = bob.get(f"/rooms/hall/line?seen=1&t={mine}", htmx=True)
    text = poll.get_data(as_text=True)
    assert poll.status_code == 200 and "Your place in hall has ended" in text
    assert "You left this line in another tab." in text
    assert "hx-get" not in text and "Leave the line" not in text
    assert ">Join again</button>" in text  # the room is open: a way back, if he wants
    again = bob.get(f"/rooms/hall/line?t={mine}")
    assert again.status_code == 410
    assert reports.summary("hall").waiting == 0  # type: ignore[union-attr]
    assert token_of(bob) is None


def test_a_poll_of_a_replaced_ticket_does_not_take_the_new_place(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """A tab showing an old place, after Bob joined again elsewhere, says so."""
    _, bob, mine = waiting(make_visitor, make_room)
    bob.client.post("/rooms/hall/leave", data={"csrf_token": bob.csrf()})
    bob.join("hall")  # joins again, in another tab
    text = bob.get(f"/rooms/hall/line?t={mine}", htmx=True).get_data(as_text=True)
    assert "no longer the one you hold" in text and "Go to your current place" in text
    assert reports.summary("hall").waiting == 1  # type: ignore[union-attr]


def test_each_reason_is_told(make_visitor: Any, make_room: Any, engine: WaitingRooms) -> None:
    """Removed by an admin, dropped out, and a room deleted: each in words, with the
    next step that makes sense (no way back into a deleted room)."""
    for why, words in (("removed", "An organiser removed you."), ("dropped", "dropped out")):
        engine.delete("hall")
        _, bob, mine = waiting(make_visitor, make_room)
        token = token_of(bob)
        assert token is not None
        engine.leave("hall", token, why=why)
        text = bob.get(f"/rooms/hall/line?t={mine}", htmx=True).get_data(as_text=True)
        assert words in text and ">Join again</button>" in text
    engine.delete("hall")
    _, bob, mine = waiting(make_visitor, make_room)
    engine.delete("hall")
    page = bob.get(f"/rooms/hall/line?t={mine}")
    text = page.get_data(as_text=True)
    assert page.status_code == 404 and "The room hall no longer exists" in text
    assert "The organisers deleted this room." in text and ">Join again</button>" not in text
    assert "Back to the lobby" in text


def test_a_closed_room_offers_no_way_back(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """A place that ended while the room is closed: no "join again", the lobby instead."""
    _, bob, mine = waiting(make_visitor, make_room)
    engine.configure("hall", {"status": "closed", "opens_at": 1_900_000_000})
    text = bob.get(f"/rooms/hall/line?t={mine}", htmx=True).get_data(as_text=True)
    assert "The room is closed to new visitors. You keep your place" in text  # not ended
    token = token_of(bob)
    assert token is not None
    engine.leave("hall", token, why="dropped")
    text = bob.get(f"/rooms/hall/line?t={mine}", htmx=True).get_data(as_text=True)
    assert "The room is closed to new visitors now; it opens again at" in text
    # the time as Babel writes it for the visitor's locale (English here)
    time = '<time datetime="2030-03-17T17:46:40Z" data-local-time>5:46\u202fPM UTC on March 17'
    assert time in text
    assert ">Join again</button>" not in text and "Back to the lobby" in text


def test_a_paused_room_says_so_on_the_waiting_page(make_visitor: Any, make_room: Any) -> None:
    """Paused with a free seat: the joiner waits, and the page says nobody is let in."""
    make_room("hall", capacity=2, status="paused", typical_stay_seconds=60)
    page = make_visitor("Bob").join("hall").get_data(as_text=True)
    assert "The room is paused, so nobody is let in right now." in page
    assert "Estimated wait" not in page and "Enter" not in page


def test_the_lobby_keeps_places_alive_and_reports_ended_ones(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """The lobby's poll checks in for a waiting place, and shows an ended one with why."""
    _, bob, _ = waiting(make_visitor, make_room)
    token = token_of(bob)
    checkin = engine.room_keys("hall").checkin
    before = engine.client.zscore(checkin, token)
    lobby = bob.get("/").get_data(as_text=True)
    assert 'id="my-places"' in lobby and 'hx-get="/places"' in lobby
    time.sleep(0.05)
    places = bob.get("/places", htmx=True).get_data(as_text=True)
    assert "you are number 1 in line" in places
    assert engine.client.zscore(checkin, token) > before  # checked in
    engine.leave("hall", token, why="removed")  # type: ignore[arg-type]
    places = bob.get("/places", htmx=True).get_data(as_text=True)
    assert "Your place in hall has ended" in places and "An organiser removed you." in places
    assert 'hx-get="/places"' not in places  # nothing live left to keep
    assert reports.summary("hall").waiting == 0  # type: ignore[union-attr]
    bob.client.post("/places/hall/dismiss", data={"csrf_token": bob.csrf()})
    assert "Your place in hall has ended" not in bob.get("/places").get_data(as_text=True)


def script_calls(engine: WaitingRooms) -> int:
    stats = engine.client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


def test_the_lobby_runs_one_poll_with_one_check_in_per_place(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """While a place is live only the places' poll runs, and it brings the room cards
    out of band; the cards' own poll runs only while no place is live."""
    make_room("other")
    _, bob, _ = waiting(make_visitor, make_room)
    lobby = bob.get("/").get_data(as_text=True)
    assert lobby.count("hx-trigger=") == 1 and 'hx-get="/places"' in lobby
    engine.client.config_resetstat()
    update = bob.get("/places", htmx=True).get_data(as_text=True)
    assert script_calls(engine) == 1  # one check-in for the one place, nothing else
    assert update.lstrip().startswith('<section id="my-places"')
    cards = update[update.index('<div id="room-cards"') :]
    assert cards.startswith('<div id="room-cards" hx-swap-oob="true">')  # no poll of its own
    assert "other" in cards and "you are number 1 in line" in update
    # A visitor with no place: the cards poll themselves, and check nobody in
    ann = make_visitor("Ann")
    engine.client.config_resetstat()
    cards = ann.get("/", htmx=True).get_data(as_text=True)
    assert 'hx-trigger="every 5s"' in cards and "my-places" not in cards
    assert script_calls(engine) == 0
    # Bob's cards' poll from a lobby opened before his place: the places take over
    cards = bob.get("/", htmx=True).get_data(as_text=True)
    section = cards.lstrip()
    assert section.startswith('<section id="my-places"')
    tag = section[: section.index(">")]
    assert 'hx-swap-oob="true"' in tag and 'hx-get="/places"' in tag
    assert '<div id="room-cards">' in cards  # the main swap, without its own poll


def test_the_room_pages_reload_never_joins_again(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """The room page's refresh names its seat: an ended seat is told, not rejoined."""
    make_room("hall", capacity=1)
    ann = make_visitor("Ann")
    room = ann.join("hall").get_data(as_text=True)
    found = re.search(r'content="[0-9]+;url=/rooms/hall\?t=([0-9a-f]{12})&amp;seat=1"', room)
    assert found
    token = token_of(ann)
    assert token is not None
    engine.leave("hall", token, why="removed")
    page = ann.get(f"/rooms/hall?t={found.group(1)}&seat=1")
    text = page.get_data(as_text=True)
    assert (
        page.status_code == 200 and "Your seat in hall has ended" in text
    )  # the room's page: there
    assert reports.summary("hall").active == 0  # type: ignore[union-attr]


def test_waiting_page_shows_progress_support_code_and_basis(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """Joined third, then one ahead left: a progress bar, an early estimate, the code."""
    make_room("hall", capacity=1, typical_stay_seconds=120)
    make_visitor("Ann").join("hall")
    cy = make_visitor("Cy")
    cy.join("hall")
    bob = make_visitor("Bob")
    page = bob.join("hall").get_data(as_text=True)
    assert "Based on a typical stay of 2 minutes, not yet measured here." in page
    assert 'data-wait="' in page
    assert "quote this if you need help" in page
    cy.client.post("/rooms/hall/leave", data={"csrf_token": cy.csrf()})
    page = bob.get("/rooms/hall/line").get_data(as_text=True)
    assert '<progress id="line-progress" max="1" value="1"' in page
    assert "You have moved up 1 of the 1 place that was ahead of you" in page  # ngettext


def test_going_in_after_the_offer_lapsed_is_told_not_rejoined(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """The way in names the page's ticket: if the seat was not taken in time, the gate
    says so instead of putting Bob at the back of the line."""
    ann, bob, mine = waiting(make_visitor, make_room)
    ann.client.post("/rooms/hall/leave", data={"csrf_token": ann.csrf()})
    turn = bob.get(f"/rooms/hall/line?t={mine}", htmx=True).get_data(as_text=True)
    assert "It's your turn!" in turn
    token = token_of(bob)
    assert token is not None
    engine.leave("hall", token, why="unclaimed")
    page = bob.get(f"/rooms/hall?t={mine}")
    text = page.get_data(as_text=True)
    assert (
        page.status_code == 200 and "it was not taken before the offer ran out" in text
    )  # the room's page: there
    assert reports.summary("hall").waiting == 0  # type: ignore[union-attr]


def test_the_lobby_words_an_ended_seat_as_a_seat(make_visitor: Any, make_room: Any) -> None:
    """A seat left from its page: the lobby says "you left" the room, a seat, not a place,
    and offers no second way back in (the room's card has the button)."""
    make_room("hall", capacity=1)
    ann = make_visitor("Ann")
    ann.join("hall")
    ann.leave("hall")
    text = ann.get("/").get_data(as_text=True)
    assert "You left hall" in text and "Your seat is free for the next person." in text
    assert ">Join again</button>" not in text and text.count('action="/rooms/hall/join"') == 1
