"""The operator's choice of order (issue 30) as visitors and API clients meet it: reject's
503 with Retry-After (a page in words, JSON for the API), random's chance of a seat
instead of a place number, passthrough's seat coming, and the position reply's fields."""

from __future__ import annotations

from typing import Any

from webapp.domain.refusals import REJECT_RETRY


def test_reject_turns_a_browser_away_with_503_and_words(make_visitor: Any, make_room: Any) -> None:
    """A new visitor of a rejecting room gets 503, Retry-After and a page that says why
    and that nobody waiting loses a place; the page asks again by itself."""
    make_room("hall", queueing_method="reject")
    page = make_visitor("Ann").join("hall")
    assert page.status_code == 503
    assert page.headers["Retry-After"] == str(REJECT_RETRY)
    text = page.get_data(as_text=True)
    assert "This room is not letting anyone new in" in text
    assert "Nobody waiting loses their place" in text
    assert "The line is too long" not in text
    assert f'data-retry-after="{REJECT_RETRY}"' in text  # retry.js joins again then


def test_reject_answers_the_api_in_json(visitor: Any, make_room: Any) -> None:
    """The JSON API's join gets 503, Retry-After and a JSON error."""
    make_room("hall", queueing_method="reject")
    reply = visitor.client.post("/api/rooms/hall/join", json={"name": "Bot"})
    assert reply.status_code == 503 and reply.headers["Retry-After"] == str(REJECT_RETRY)
    assert "takes no new visitors" in reply.get_json()["error"]


def test_reject_keeps_the_waiting_and_tells_them(
    make_visitor: Any, make_room: Any, engine: Any
) -> None:
    """Someone waiting when the room starts rejecting keeps the place, and the waiting
    page says new visitors are turned away."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    assert "your place in line" in bob.join("hall").get_data(as_text=True)
    engine.configure("hall", {"queueing_method": "reject"})
    page = bob.get("/rooms/hall").get_data(as_text=True)
    assert "your place in line" in page
    assert "The room is not letting anyone new in for now. You keep your place" in page


def test_random_shows_a_chance_not_a_place(make_visitor: Any, make_room: Any) -> None:
    """Under random order the waiting page tells the chance of a seat in the next
    minutes, and no place number or wait."""
    make_room("hall", capacity=1, queueing_method="random")
    make_visitor("Ann").join("hall")
    page = make_visitor("Bob").join("hall").get_data(as_text=True)
    assert "drawn at random among everyone waiting" in page
    assert "Your chance of a seat in the next 5 minutes: about 33%" in page
    assert 'class="big"' not in page and "Estimated wait" not in page


def test_the_position_reply_names_the_method_and_chance(
    visitor: Any, make_room: Any, engine: Any
) -> None:
    """The API's standing carries queueing_method and, under random, seat_chance; the
    old fields stay."""
    make_room("hall", capacity=1)
    visitor.client.post("/api/rooms/hall/join", json={"name": "Ann"})
    bob = visitor.client.post("/api/rooms/hall/join", json={"name": "Bob"}).get_json()
    assert bob["queueing_method"] == "fifo" and bob["seat_chance"] is None
    assert bob["position"] == 1 and bob["wait"] is not None
    engine.configure("hall", {"queueing_method": "random"})
    again = visitor.client.get(f"/api/rooms/hall/position/{bob['token']}").get_json()
    assert again["queueing_method"] == "random"
    assert again["seat_chance"] == {"within": 300, "chance": 0.333}
    assert again["wait"] is None and again["position"] == 1
    engine.configure("hall", {"queueing_method": "passthrough"})
    through = visitor.client.get(f"/api/rooms/hall/position/{bob['token']}").get_json()
    assert through["status"] == "admitted"


def test_passthrough_lets_a_visitor_in_beyond_capacity(
    make_visitor: Any, make_room: Any, engine: Any
) -> None:
    """A room on passthrough lets a visitor in at once, whatever the seats."""
    make_room("hall", capacity=1, queueing_method="passthrough")
    make_visitor("Ann").join("hall")
    make_visitor("Bob").join("hall")
    summary = engine.client.zcard(engine.room_keys("hall").seats)
    assert summary == 2


def test_the_room_page_says_so_before_anyone_presses_join(
    visitor: Any, make_room: Any, make_visitor: Any, engine: Any
) -> None:
    """The room's page of a rejecting room says it takes nobody new and offers no join
    button; under random it tells a newcomer's chance; under passthrough, straight in."""
    make_room("hall", capacity=1, queueing_method="reject")
    page = visitor.get("/rooms/hall").get_data(as_text=True)
    assert "This room is not letting anyone new in right now" in page
    assert 'id="join"' not in page
    engine.configure("hall", {"queueing_method": "random"})
    make_visitor("Ann").join("hall")
    page = visitor.get("/rooms/hall").get_data(as_text=True)
    assert "drawn at random among everyone waiting" in page
    assert "If you join now, your chance of a seat in the next 5 minutes is about 33%" in page
    engine.configure("hall", {"queueing_method": "passthrough"})
    page = visitor.get("/rooms/hall").get_data(as_text=True)
    assert "A seat is free: you go straight in." in page


def test_the_lobby_names_no_place_under_random(make_visitor: Any, make_room: Any) -> None:
    """The lobby's list of a visitor's places says a random room's place is a draw,
    with no number."""
    make_room("hall", capacity=1, queueing_method="random")
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    lobby = bob.get("/").get_data(as_text=True)
    assert "you are waiting for a seat drawn at random among everyone waiting" in lobby
    assert "you are number 1 in line" not in lobby
