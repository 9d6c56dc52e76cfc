"""The browser pages: lobby, gate, waiting page and its partial, room page, leaving."""

from __future__ import annotations

import re
import time
from typing import Any

from webapp.domain.rooms import WaitingRooms
from webapp.web.security import CONTENT_SECURITY_POLICY


def test_lobby_asks_for_a_name_and_lists_rooms(visitor: Any, make_room: Any) -> None:
    """A new visitor sees the name form and every room with its figures."""
    make_room("hall", capacity=3)
    page = visitor.get("/")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert 'name="name"' in html
    assert "hall" in html and "0 / 3" in html


def test_every_response_has_security_headers(visitor: Any) -> None:
    """Pages, errors and static files carry the CSP and friends; JSON replies the data
    set: nothing loads, frames or is framed."""
    for path in ("/", "/rooms/nope", "/static/css/app.css"):
        reply = visitor.get(path)
        reply.close()  # the static file's handle
        headers = reply.headers
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert "Referrer-Policy" in headers and "Permissions-Policy" in headers
    assert "unsafe" not in CONTENT_SECURITY_POLICY
    for path in ("/api/rooms", "/api/rooms/nope/position/nope"):
        headers = visitor.get(path).headers
        assert headers["Content-Type"] == "application/json"
        assert headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert "Permissions-Policy" not in headers  # a document's policy: no document here
        assert headers.getlist("X-Frame-Options") == ["DENY"]  # once, never twice


def test_a_views_own_security_header_is_kept(app: Any) -> None:
    """A header the app set itself is neither overwritten nor sent twice."""
    app.add_url_rule("/own", "own", lambda: ("framed", 200, {"X-Frame-Options": "SAMEORIGIN"}))
    headers = app.test_client().get("/own").headers
    assert headers.getlist("X-Frame-Options") == ["SAMEORIGIN"]
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY  # the rest added


def test_pages_have_no_inline_script_or_style(make_visitor: Any, make_room: Any) -> None:
    """Every script is a file and nothing needs 'unsafe-inline'."""
    make_room("hall", capacity=1)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    for html in (
        ann.get("/").get_data(as_text=True),
        ann.join("hall").get_data(as_text=True),
        bob.join("hall").get_data(as_text=True),
    ):
        assert "<script>" not in html and "style=" not in html and "hx-on" not in html
        assert 'src="/static/vendor/htmx.min.js"' in html


def test_name_needs_a_csrf_token(visitor: Any) -> None:
    """A form posted without the token is refused and changes nothing."""
    refused = visitor.client.post("/name", data={"name": "Mallory"})
    assert refused.status_code == 400
    assert "Mallory" not in visitor.get("/").get_data(as_text=True)


def test_empty_name_is_refused_kindly(visitor: Any) -> None:
    """A blank name sends the visitor back to the form with a message."""
    reply = visitor.client.post("/name", data={"name": "  ", "csrf_token": visitor.csrf()})
    assert reply.status_code == 303
    assert "Please type a name" in visitor.get("/").get_data(as_text=True)


def test_shared_link_asks_for_a_name_and_joins_only_at_the_button(
    visitor: Any, make_room: Any, reports: Any
) -> None:
    """/rooms/<room> without a name shows the room with a name field and one button; the
    visit joins nobody, the button (a POST with the name) joins and shows the place."""
    make_room("hall")
    first = visitor.get("/rooms/hall")
    html = first.get_data(as_text=True)
    assert first.status_code == 200 and 'action="/rooms/hall/join"' in html
    assert 'name="name"' in html and reports.summary("hall").active == 0  # type: ignore[union-attr]
    token = visitor.csrf("/rooms/hall")
    reply = visitor.client.post("/rooms/hall/join", data={"name": "Ann", "csrf_token": token})
    assert reply.status_code == 303 and reply.headers["Location"] == "/rooms/hall"
    assert "You are in" in visitor.get("/rooms/hall").get_data(as_text=True)
    assert reports.summary("hall").active == 1  # type: ignore[union-attr]
    blank = visitor.client.post("/rooms/other/join", data={"name": " ", "csrf_token": token})
    assert blank.status_code == 404  # no such room: nothing joined


def test_a_blank_name_at_the_button_is_asked_again(visitor: Any, make_room: Any) -> None:
    """The room's button with an empty name: the same page, saying why, nobody joined."""
    make_room("hall")
    token = visitor.csrf("/rooms/hall")
    reply = visitor.client.post("/rooms/hall/join", data={"name": " ", "csrf_token": token})
    text = reply.get_data(as_text=True)
    assert reply.status_code == 400 and "Please type a name that others will see." in text
    assert 'aria-invalid="true"' in text


def test_next_must_be_a_room_of_this_site(visitor: Any) -> None:
    """An open redirect through ?next= is not possible."""
    token = visitor.csrf()
    reply = visitor.client.post(
        "/name", data={"name": "Ann", "next": "//evil.example/x", "csrf_token": token}
    )
    assert reply.headers["Location"] == "/"


def test_admitted_visitor_gets_the_room_page(make_visitor: Any, make_room: Any) -> None:
    """A free seat: the gate shows the room with its participants, names escaped."""
    make_room("hall", capacity=2)
    ann = make_visitor("<b>Ann</b>")
    page = ann.join("hall")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "You are in" in html and 'data-ws="/rooms/hall/ws"' in html
    assert "&lt;b&gt;Ann&lt;/b&gt;" in html and "<b>Ann</b>" not in html
    assert '<span id="active">1</span> / <span id="capacity">2</span>' in html


def test_second_visitor_waits_in_line(make_visitor: Any, make_room: Any) -> None:
    """A full room: the gate shows the waiting page, polled, with a no-JS refresh."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    page = make_visitor("Bob").join("hall")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert '<span class="big" data-figure="position">1</span>' in html
    poll = r'hx-get="/rooms/hall/line\?seen=1&amp;t=[0-9a-f]{12}(&amp;shown=[0-9.,]+)?"'
    assert re.search(poll, html)
    assert re.search(r'hx-trigger="load delay:[0-9.]+s, next, retry"', html)
    refresh = r'http-equiv="refresh" content="[0-9]+;url=/rooms/hall/line\?t=[0-9a-f]+"'
    assert re.search(refresh, html)
    assert 'aria-live="polite"' in html and "Leave the line" in html


def test_a_poll_carries_its_figure_and_leaves_the_cookie_alone(
    make_visitor: Any, make_room: Any
) -> None:
    """htmx's poll is the check-in of everyone in line: it answers without a Set-Cookie
    (the session is as it was), and the figure it shows travels in the next poll's URL."""
    make_room("hall", capacity=1, typical_stay_seconds=60)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    html = bob.join("hall").get_data(as_text=True)
    url = re.search(r'hx-get="(/rooms/hall/line\?[^"]+)"', html)
    assert url and "shown=" in url.group(1)
    for _ in range(2):
        poll = bob.get(url.group(1).replace("&amp;", "&"), htmx=True)
        assert poll.status_code == 200 and "Set-Cookie" not in poll.headers
        url = re.search(r'hx-get="(/rooms/hall/line\?[^"]+)"', poll.get_data(as_text=True))
        assert url and "shown=" in url.group(1)


def test_a_poll_with_a_made_up_figure_is_answered_as_one_without(
    make_visitor: Any, make_room: Any
) -> None:
    """The figure in the poll's URL comes from the client: anything that is not one is
    ignored (the raw estimate is shown), never a 500."""
    make_room("hall", capacity=1, typical_stay_seconds=60)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    html = bob.join("hall").get_data(as_text=True)
    url = re.search(r'hx-get="(/rooms/hall/line\?[^"]+)"', html)
    assert url
    plain = re.sub(r"&amp;shown=[^&]*", "", url.group(1)).replace("&amp;", "&")
    for made_up in ("nan,nan,nan", "1e309,1,1", "-5,1,1", "x" * 5000, "1,2", ",,,,"):
        poll = bob.get(f"{plain}&shown={made_up}", htmx=True)
        assert poll.status_code == 200 and 'data-figure="position">1<' in poll.get_data(
            as_text=True
        )


def test_joining_twice_keeps_the_same_place(make_visitor: Any, make_room: Any) -> None:
    """One person, one place: reloading the gate does not join again."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    bob.join("hall")
    assert '<span class="big" data-figure="position">1</span>' in bob.join("hall").get_data(
        as_text=True
    )


def test_line_partial_for_htmx_full_page_otherwise(make_visitor: Any, make_room: Any) -> None:
    """The poll answers htmx with the partial alone and a browser with the whole page."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    partial = bob.get("/rooms/hall/line?seen=1", htmx=True).get_data(as_text=True)
    assert partial.lstrip().startswith("<div") and "<html" not in partial
    assert 'id="line-status"' in partial and "#announce" not in partial  # did not move
    assert partial.count("hx-swap-oob") == 1  # only the notice, replaced out of band
    full = bob.get("/rooms/hall/line").get_data(as_text=True)
    assert full.startswith("<!doctype html>") and 'id="line-status"' in full


def test_moving_up_is_announced(make_visitor: Any, make_room: Any) -> None:
    """When the position changed since the last poll, the live region hears of it."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    partial = bob.get("/rooms/hall/line?seen=4", htmx=True).get_data(as_text=True)
    assert 'hx-swap-oob="innerHTML:#announce"' in partial
    assert "You are now number 1 in line" in partial


def test_admission_shows_its_your_turn_then_the_room(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """When a seat frees, the poll answers "it's your turn" with the way in (and, without
    JavaScript, straight into the room); the room's page then seats Bob."""
    make_room("hall", capacity=1)
    ann = make_visitor("Ann")
    ann.join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    ann.client.post("/rooms/hall/leave", data={"csrf_token": ann.csrf()})
    answer = bob.get("/rooms/hall/line?seen=1", htmx=True)
    text = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "HX-Redirect" not in answer.headers
    assert "It's your turn!" in text and 'data-go="/rooms/hall"' in text
    assert re.search(r'data-left="([0-9]+)"', text)
    full = bob.get("/rooms/hall/line")  # without JavaScript: into the room at once
    assert full.status_code == 303 and full.headers["Location"] == "/rooms/hall"
    room = bob.join("hall").get_data(as_text=True)
    assert 'data-welcome="1"' in room and "Bob" in room and "Ann" not in room


def test_leave_needs_csrf_and_gives_the_place_up(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """Leaving without the token is refused; with it, the seat is free again."""
    make_room("hall", capacity=1)
    ann = make_visitor("Ann")
    ann.join("hall")
    assert ann.client.post("/rooms/hall/leave").status_code == 400
    assert reports.summary("hall").active == 1  # type: ignore[union-attr]
    reply = ann.client.post("/rooms/hall/leave", data={"csrf_token": ann.csrf()})
    assert reply.status_code == 303 and reply.headers["Location"] == "/rooms/hall"
    assert reports.summary("hall").active == 0  # type: ignore[union-attr]
    assert "You left hall" in ann.get("/rooms/hall").get_data(as_text=True)


def test_htmx_post_with_csrf_header_is_accepted(make_visitor: Any, make_room: Any) -> None:
    """htmx sends the token as X-CSRFToken (hx-headers on the body)."""
    make_room("hall")
    ann = make_visitor("Ann")
    html = ann.join("hall").get_data(as_text=True)
    assert "X-CSRFToken" in html
    token = ann.csrf("/rooms/hall")
    reply = ann.client.post(
        "/rooms/hall/leave", headers={"X-CSRFToken": token, "HX-Request": "true"}
    )
    assert reply.status_code == 200 and reply.headers["HX-Redirect"] == "/rooms/hall"


def test_lobby_shows_the_visitors_own_place(make_visitor: Any, make_room: Any) -> None:
    """A visitor holding a seat or a place sees it instead of a second join."""
    make_room("hall", capacity=1)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    ann.join("hall")
    bob.join("hall")
    assert "You hold a seat here." in ann.get("/").get_data(as_text=True)
    assert "You are number 1 in line." in bob.get("/").get_data(as_text=True)


def test_ended_ticket_gets_a_friendly_answer(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """A place that ended: 410 page, or a partial that stops polling for htmx."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    with bob.client.session_transaction() as session:
        token = session["tickets"]["hall"]
    engine.leave("hall", token, why="removed")
    partial = bob.get("/rooms/hall/line", htmx=True)
    text = partial.get_data(as_text=True)
    assert partial.status_code == 200 and "Your place in hall has ended" in text
    assert "hx-get" not in text and "An organiser removed you." in text
    assert "Leave the line" not in text and "Keep this page open" not in text
    bob.join("hall")  # joins again: a new place at the back
    with bob.client.session_transaction() as session:
        token = session["tickets"]["hall"]
    engine.leave("hall", token)
    page = bob.get("/rooms/hall/line")
    assert page.status_code == 410 and ">Join again</button>" in page.get_data(as_text=True)


def test_unknown_room_is_404(make_visitor: Any) -> None:
    """A room that does not exist gets a friendly 404 page."""
    page = make_visitor("Ann").join("nowhere")
    assert page.status_code == 404 and "We could not find that" in page.get_data(as_text=True)


def test_closed_room_is_409(make_visitor: Any, make_room: Any) -> None:
    """A closed room refuses new visitors with 409 and says so."""
    make_room("hall", status="closed")
    page = make_visitor("Ann").join("hall")
    assert page.status_code == 409 and "This room is closed" in page.get_data(as_text=True)


def test_admission_control_is_503_with_retry_after(make_visitor: Any, make_room: Any) -> None:
    """A line at its limit refuses a join with 503 and Retry-After (60 s: no estimate)."""
    make_room("hall", capacity=1, max_line_length=1, typical_stay_seconds=None)
    make_visitor("Ann").join("hall")
    make_visitor("Bob").join("hall")
    page = make_visitor("Cy").join("hall")
    assert page.status_code == 503 and page.headers["Retry-After"] == "60"
    text = page.get_data(as_text=True)
    assert "The line is too long right now" in text
    assert "come back in about a minute or two" in text


def test_api_is_exempt_from_csrf(visitor: Any, make_room: Any) -> None:
    """The JSON API takes no cookies, so it needs no CSRF token."""
    make_room("hall")
    reply = visitor.client.post("/api/rooms/hall/join", json={"name": "Bot"})
    assert reply.status_code == 200 and reply.get_json()["status"] == "admitted"


def test_lobby_does_not_stretch_a_seat(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """Looking at the lobby is not a check-in of a seat: the grace still applies."""
    make_room("hall", capacity=1)
    ann = make_visitor("Ann")
    ann.join("hall")
    with ann.client.session_transaction() as session:
        token = session["tickets"]["hall"]
    engine.presence("hall", token, "close")  # the room page was closed
    seats = engine.room_keys("hall").seats
    held_until = engine.client.zscore(seats, token)
    assert "You hold a seat here." in ann.get("/").get_data(as_text=True)
    assert engine.client.zscore(seats, token) == held_until


def test_waiting_page_carries_the_shown_wait(
    make_visitor: Any, make_room: Any, engine: WaitingRooms
) -> None:
    """Each poll remembers the shown wait in the session, so the next one moves from it."""
    make_room("hall", capacity=1)
    for _ in range(6):  # some seat history, so there is an estimate to show
        seated = engine.join("hall")
        time.sleep(0.005)  # a hold that lasted a measurable time
        engine.leave("hall", seated.token)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    bob.get("/rooms/hall/line", htmx=True)
    with bob.client.session_transaction() as session:
        assert set(session["shown"]) == {"hall"}
    bob.client.post("/rooms/hall/leave", data={"csrf_token": bob.csrf()})
    with bob.client.session_transaction() as session:
        assert "hall" not in session["shown"]
