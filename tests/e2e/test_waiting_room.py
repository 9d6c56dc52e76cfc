"""Two people, one seat: the waiting room as a person sees it, in a real browser."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import visiting
import websocket
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


# Bob's tab is in the background and he allowed notifications; they are recorded.
BACKGROUND_TAB = """
Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
window.notified = [];
window.Notification = class {
  constructor(title) { window.notified.push(title); }
  static get permission() { return "granted"; }
  static requestPermission() { return Promise.resolve("granted"); }
};
"""


SHOW_TAB = """
Object.defineProperty(document, "hidden", {configurable: true, get: () => false});
document.dispatchEvent(new Event("visibilitychange"));
"""


def enter(page: Any, server: Any, room: str, name: str, shots: Path | None = None) -> None:
    """Follows a shared link to the room, picking a display name on the way."""
    page.goto(f"{server.url}/rooms/{room}")
    if shots is not None:
        shoot(page, shots, "name")
    visiting.enter(page, server.url, room, name)


def in_room(page: Any, room: str) -> None:
    expect(page).to_have_url(re.compile(rf"/rooms/{room}(\?t=[0-9a-f]+)?$"))
    heading = page.get_by_role("heading", name=f"You are in {room}")
    expect(heading).to_be_visible()  # after the "it's your turn" moment
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")


def warm_up(server: Any, room: str, releases: int = 6) -> None:
    """Seats taken and freed through the API, so the room can estimate waits."""
    for _ in range(releases):
        ticket = server.api("POST", f"/api/rooms/{room}/join")
        server.api("POST", f"/api/rooms/{room}/leave/{ticket['token']}")


def shoot(page: Any, artifacts: Path, name: str) -> None:
    """Screenshots at a desktop and a phone width (the layout check)."""
    for width, height in ((1280, 860), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def test_leaving_lets_the_next_person_in(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """A is admitted, B waits first in line with an estimate, A leaves, B is let in."""
    # B's offer lasts dropout_seconds while his tab is in the background: long enough for
    # the checks below on a loaded machine (6 s ran out once, fresh-clone run 6)
    name = room(capacity=1, grace_seconds=2, dropout_seconds=20)
    warm_up(server, name)
    ann, bob = person(), person()
    bob.add_init_script(BACKGROUND_TAB)
    enter(ann, server, name, "Ann", shots=artifacts)
    in_room(ann, name)
    expect(ann.locator("#participants")).to_have_text(re.compile(r"Ann\s*\(you\)"))

    enter(bob, server, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    expect(bob.locator(".estimate")).to_contain_text("Estimated wait: less than a minute")
    expect(bob).to_have_title(re.compile(r"Number 1 in line"))
    expect(ann.locator("#waiting")).to_have_text("1")  # the room's periodic refresh
    shoot(bob, artifacts, "waiting")
    shoot(ann, artifacts, "room")

    visiting.leave(ann, "Leave the room")
    expect(ann.get_by_role("heading", name=f"You left {name}")).to_be_visible()
    shoot(ann, artifacts, "left")

    # His tab is in the background: told (title, notification), the seat held for him.
    expect(bob.get_by_role("heading", name="It's your turn!")).to_be_visible()
    expect(bob).to_have_title(f"It's your turn! · {name}")
    expect(bob.locator("#turn-go")).to_have_text("Come back to this tab to go in.")
    assert bob.evaluate("window.notified") == ["It's your turn"]
    bob.evaluate(SHOW_TAB)
    in_room(bob, name)  # no click: back on the tab, the page took Bob in after a moment
    expect(bob.locator("#participants li")).to_have_count(1)
    expect(bob.locator("#participants")).to_contain_text("Bob")


def test_a_reload_keeps_the_seat_and_a_closed_page_gives_it_up(
    server: Any, room: Any, person: Any
) -> None:
    """Inside the grace period a reload keeps A's seat; gone longer, B gets it."""
    name = room(capacity=1, grace_seconds=2, dropout_seconds=6)
    ann, bob = person(), person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    enter(bob, server, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    expect(ann.locator("#participants li")).to_have_count(1)

    ann.reload()
    in_room(ann, name)
    expect(ann.locator("#participants")).to_contain_text("Ann")
    # Bob's check-ins over more than the grace period all find him still waiting.
    until = time.monotonic() + 3.5
    while time.monotonic() < until:
        with bob.expect_response(re.compile(r"/line\?")) as poll:
            pass
        assert poll.value.status == 200 and "hx-redirect" not in poll.value.headers
    expect(bob.locator("#line-status .big")).to_have_text("1")
    expect(bob).to_have_url(re.compile(rf"/rooms/{name}$"))
    assert "Bob" not in ann.locator("#participants").inner_text()

    ann.close()
    # The grace ran out, and the seat went to Bob unasked: his turn, then the room.
    expect(bob.get_by_role("heading", name="It's your turn!")).to_be_visible()
    in_room(bob, name)
    expect(bob.locator("#participants li")).to_have_count(1)
    expect(bob.locator("#participants")).to_contain_text("Bob")


# Every text "#turn-go" shows, in order (the moment's count), kept across the way in.
TURN_TEXTS = """
new MutationObserver(function () {
  var go = document.getElementById("turn-go");
  var text = go && !go.hidden ? go.textContent : "";
  var seen = JSON.parse(sessionStorage.getItem("turnTexts") || "[]");
  if (text && seen[seen.length - 1] !== text) {
    seen.push(text);
    sessionStorage.setItem("turnTexts", JSON.stringify(seen));
  }
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_a_turn_seen_late_goes_in_before_the_offer_runs_out(
    server: Any, room: Any, person: Any
) -> None:
    """A poll made just before an offer runs out sees little of its hold left: the
    "it's your turn" moment shortens so the page still goes in with time to spare (the
    full 3 s moment once outlasted a 6 s offer seen 3 s late, and the seat was lost)."""
    name = room(capacity=1, grace_seconds=2, dropout_seconds=30)
    ann, bob = person(), person()
    bob.add_init_script(TURN_TEXTS)
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    enter(bob, server, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")

    def four_seconds_left(route: Any) -> None:  # the offer as a late poll finds it
        answer = route.fetch()
        body = re.sub(r'data-left="\d+"', 'data-left="4"', answer.text())
        route.fulfill(response=answer, body=body)

    bob.route(re.compile(r"/line\?"), four_seconds_left)
    visiting.leave(ann, "Leave the room")
    expect(bob.get_by_role("heading", name="It's your turn!")).to_be_visible()
    in_room(bob, name)
    # 4 s left: half of it for the moment, never the full 3 s
    texts = json.loads(bob.evaluate("sessionStorage.getItem('turnTexts')"))
    assert texts == ["Taking you in… 2", "Taking you in… 1"]


def test_room_socket_refuses_a_foreign_origin(server: Any, room: Any, person: Any) -> None:
    """The live server refuses a handshake from another site, even with the cookie."""
    name = room(capacity=2)
    ann = person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in ann.context.cookies())
    url = server.url.replace("http://", "ws://") + f"/rooms/{name}/ws"
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(
            url, header=[f"Cookie: {cookie}"], origin="https://evil.example"
        )
    assert refused.value.status_code == 403
    own = websocket.create_connection(url, header=[f"Cookie: {cookie}"], origin=server.url)
    try:
        frame = json.loads(own.recv())
        assert frame["type"] == "room.state" and frame["capacity"] == 2
    finally:
        own.close()


def test_without_javascript_the_line_still_moves(server: Any, room: Any, person: Any) -> None:
    """With scripts off the waiting page refreshes itself and still lets Bob in: the
    reload that finds a seat free goes straight into the room."""
    name = room(capacity=1, grace_seconds=2, dropout_seconds=6)
    ann, bob = person(), person(javascript=False)
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    enter(bob, server, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    with bob.expect_navigation(url=re.compile(r"/line\?t=[0-9a-f]+$")):
        pass  # the meta refresh: a check-in
    visiting.leave(ann, "Leave the room")
    in_room_url = re.compile(rf"/rooms/{name}(\?t=[0-9a-f]+&seat=1)?$")
    expect(bob).to_have_url(in_room_url)
    expect(bob.get_by_role("heading", name=f"You are in {name}")).to_be_visible()
    expect(bob.locator("#participants")).to_contain_text("Bob")


def test_room_socket_frames(server: Any, room: Any) -> None:
    """Typed frames: ping answered, bad frames told off, an ended seat says "gone"."""
    name = room(capacity=2)
    visitor = server.visitor("Ann")
    visitor.join(name)
    url = server.url.replace("http://", "ws://") + f"/rooms/{name}/ws"
    ws = websocket.create_connection(
        url, header=[f"Cookie: {visitor.cookie()}"], origin=server.url, timeout=10
    )
    try:
        assert json.loads(ws.recv())["type"] == "room.state"
        ws.send(json.dumps({"type": "ping", "at": 7}))
        assert next_frame(ws, "pong") == {"type": "pong", "at": 7}
        ws.send("not json")
        assert "JSON object" in next_frame(ws, "error")["error"]
        ws.send(json.dumps({"type": "no.such.frame"}))
        assert "unknown frame type" in next_frame(ws, "error")["error"]
        visitor.leave(name)
        gone = next_frame(ws, "gone")
        assert "you left" in gone["message"] and gone["rejoin"] == f"/rooms/{name}"
    finally:
        ws.close()


def next_frame(ws: Any, kind: str) -> dict[str, Any]:
    """The next frame of a type, skipping the room.state refreshes in between."""
    while True:
        frame: dict[str, Any] = json.loads(ws.recv())
        if frame["type"] == kind:
            return frame


def test_refusals_are_friendly_pages(server: Any, room: Any, person: Any, artifacts: Path) -> None:
    """A closed room says so on its page, with no button to join; an unknown one (404)
    gets a page that says so."""
    closed = room(status="closed")
    page = person()
    page.goto(f"{server.url}/rooms/no-such-room")
    expect(page.get_by_role("heading", name="We could not find that")).to_be_visible()
    page.goto(f"{server.url}/rooms/{closed}")
    expect(page.get_by_text("Closed: this room takes no new visitors")).to_be_visible()
    expect(page.locator("#join")).to_have_count(0)
    shoot(page, artifacts, "closed")
    assert page.goto(f"{server.url}/rooms/no-such-room").status == 404


def test_a_poll_that_keeps_the_pages_shape_sets_its_figures_in_place(
    server: Any, room: Any, person: Any
) -> None:
    """Cara waits second. Bob, ahead of her, leaves the line: her page's next poll is
    answered with the figures alone (JSON: the page's shape holds), and the script sets
    them where they stand, the part itself kept: her place, how far she has come, the
    title, what a screen reader hears, the notice; and it asks again after the delay
    the answer gave."""
    name = room(capacity=1, dropout_seconds=6)  # the head polls every 3 s
    ann, bob, cara = person(), person(), person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    enter(bob, server, name, "Bob")
    enter(cara, server, name, "Cara")
    expect(cara.locator("#line-status .big")).to_have_text("2")
    answers: list[str] = []
    cara.on(
        "response",
        lambda r: answers.append(r.headers.get("content-type", "")) if "/line?" in r.url else None,
    )
    cara.evaluate("document.getElementById('line-status').kept = true")  # gone if swapped
    visiting.leave(bob)
    server.as_admin("POST", f"/api/admin/rooms/{name}/notice", {"text": "Doors at 8"})
    expect(cara.locator("#line-status .big")).to_have_text("1")
    expect(cara.locator("#announce")).to_have_text("You are now number 1 in line.")
    expect(cara.locator("#progress-text")).to_contain_text("You have moved up 1 of the 1 place")
    expect(cara).to_have_title(re.compile(r"^Number 1 in line"))
    expect(cara.locator("#notice-text")).to_have_text("Doors at 8")
    expect(cara.locator("#notice")).to_be_visible()
    assert cara.evaluate("document.getElementById('line-status').kept") is True
    assert answers and all(kind.startswith("application/json") for kind in answers)
    seen = len(answers)
    cara.wait_for_timeout(7000)  # two more polls, 3 s apart
    assert len(answers) >= seen + 2 and all(k.startswith("application/json") for k in answers)
    expect(cara.locator("#line-status .live")).to_have_text("Updated just now")


def test_a_lost_poll_is_shown_and_retried(server: Any, room: Any, person: Any) -> None:
    """When check-ins fail the page says so, and it recovers when they work again."""
    name = room(capacity=1, dropout_seconds=20)
    ann, bob = person(), person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    enter(bob, server, name, "Bob")
    status = bob.locator("#line-status .live")
    expect(status).to_have_text("Updated just now")
    bob.route(re.compile(r"/line\?"), lambda route: route.abort())
    expect(status).to_contain_text("Connection lost, trying again…")
    expect(status).to_contain_text(re.compile(r"\(updated (just now|\d+ s ago)\)"))
    expect(status).to_have_attribute("data-state", "reconnecting")
    bob.unroute(re.compile(r"/line\?"))
    expect(status).to_have_text("Updated just now")
    expect(bob.locator("#line-status .big")).to_have_text("1")


def test_a_seat_that_ends_says_so_and_offers_a_way_back(server, room, person, artifacts):
    """When the seat ends under an open room page, the ended state replaces the live
    parts; a deleted room offers the lobby, not a way back in."""
    name = room(capacity=1)
    ann = person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    expect(ann.locator("#connection")).to_have_attribute("data-state", "live")
    server.delete(name)
    expect(ann.get_by_role("heading", name=f"The room {name} no longer exists")).to_be_visible()
    expect(ann.get_by_text("The organisers deleted this room.")).to_be_visible()
    expect(ann.get_by_role("link", name="Back to the lobby")).to_be_visible()
    expect(ann.get_by_role("button", name="Join again")).to_have_count(0)
    for live in ("#participants", "#leave", "#chat", "#active"):
        expect(ann.locator(live)).to_have_count(0)
    expect(ann.locator("#connection")).to_be_hidden()
    shoot(ann, artifacts, "room-ended")
