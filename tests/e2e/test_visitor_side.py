"""The visitor's side (issue 12, part A) in a real browser: places kept alive by any open
page, ended places told with why, the first wave's early estimate, the "it's your turn"
moment, and axe-core on the waiting and room pages (light and dark, 390 and 1280 px)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import visiting
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

SERIOUS = ("serious", "critical")
WIDTHS = ((1280, 860), (390, 844))


def enter(page: Any, server: Any, room: str, name: str) -> None:
    """Follows the room's link and joins, picking a display name first if not done yet."""
    visiting.enter(page, server.url, room, name)


def seat_taken(server: Any, room: str) -> str:
    """Someone outside the browser holds the room's only seat; returns their ticket."""
    ticket = server.api("POST", f"/api/rooms/{room}/join")
    assert ticket["status"] == "admitted"
    return str(ticket["token"])


def waiting(page: Any, server: Any, room: str, name: str = "Bob") -> None:
    enter(page, server, room, name)
    expect(page.locator("#line-status .big")).to_have_text("1")


def line_length(server: Any, room: str) -> int:
    return int(server.api("GET", f"/api/rooms/{room}/qsize")["len"])


def shoot(page: Any, artifacts: Path, name: str) -> None:
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def axe(page: Any, what: str) -> list[str]:
    """Serious or critical axe-core violations, light and dark, at both widths."""
    from axe_playwright_python.sync_playwright import Axe

    found = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width, height in WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            results = Axe().run(page)
            found += [
                f"{what} {scheme} {width}: {v['id']} ({v['impact']}): {v['help']} at "
                + ", ".join(str(n["target"]) for n in v["nodes"][:3])
                for v in results.response["violations"]
                if v["impact"] in SERIOUS
            ]
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 860})
    return found


def test_the_lobby_keeps_a_place_alive(server: Any, room: Any, person: Any, artifacts: Path):
    """Bob waits, then browses the lobby for longer than dropout_seconds: his place stays,
    and the lobby says where he stands."""
    name = room(capacity=1, dropout_seconds=5)
    seat_taken(server, name)
    bob = person()
    waiting(bob, server, name)
    bob.goto(f"{server.url}/")
    places = bob.locator("#my-places")
    expect(places).to_contain_text(f"{name}: you are number 1 in line")
    time.sleep(8)  # past dropout_seconds (the sweep runs every 0.25 s)
    assert line_length(server, name) == 1
    expect(places).to_contain_text(f"{name}: you are number 1 in line")
    shoot(bob, artifacts, "lobby-places")
    places.get_by_role("link", name="Back to your place").click()
    expect(bob.locator("#line-status .big")).to_have_text("1")


def test_leaving_in_one_tab_is_told_in_the_other(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Bob leaves in one tab: the other says so at its next poll, and joins nobody."""
    name = room(capacity=1, dropout_seconds=6)
    seat_taken(server, name)
    bob = person()
    waiting(bob, server, name)
    other = bob.context.new_page()
    other.goto(f"{server.url}/rooms/{name}")  # the same place, in a second tab
    expect(other.locator("#line-status .big")).to_have_text("1")
    visiting.leave(bob)
    expect(bob.get_by_role("heading", name=f"You left the line for {name}")).to_be_visible()
    expect(other.get_by_role("heading", name=f"Your place in {name} has ended")).to_be_visible()
    expect(other.get_by_text("You left this line in another tab.")).to_be_visible()
    expect(other.get_by_role("link", name="Leave the line")).to_have_count(0)
    expect(other.get_by_text("Keep this page")).to_have_count(0)
    expect(other.get_by_role("button", name="Join again")).to_be_visible()
    time.sleep(3)  # more polls would have had time to join again: none does
    assert line_length(server, name) == 0
    shoot(other, artifacts, "waiting-ended")


def test_first_in_line_sees_an_early_estimate(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Nothing measured yet, typical_stay_seconds set: the first in line sees a wait,
    called an early estimate, with the entry time as a clock time."""
    name = room(capacity=1, typical_stay_seconds=120)
    seat_taken(server, name)
    bob = person()
    waiting(bob, server, name)
    expect(bob.locator(".estimate")).to_contain_text("Estimated wait: about")
    expect(bob.locator(".estimate .eta")).to_have_text(re.compile(r"\(around \d{1,2}:\d\d"))
    expect(bob.locator(".basis")).to_contain_text("Based on a typical stay of 2 minutes")
    expect(bob.locator("#line-status .updated")).to_have_text("Updated just now")
    expect(bob.locator(".support")).to_contain_text("quote this if you need help")
    shoot(bob, artifacts, "waiting-early")


def test_each_ended_reason_is_told(server: Any, room: Any, person: Any, artifacts: Path) -> None:
    """Removed by an admin, dropped out while away, the room closed, the room deleted:
    the waiting page says which, and offers only the next step that makes sense."""
    bob = person()

    removed = room(capacity=1, dropout_seconds=6)
    seat_taken(server, removed)
    waiting(bob, server, removed)
    code = bob.locator(".support .code").inner_text()
    server.as_admin("POST", f"/api/admin/rooms/{removed}/remove/{code}")
    expect(bob.get_by_text("An organiser removed you.")).to_be_visible()
    expect(bob.get_by_role("button", name="Join again")).to_be_visible()

    dropped = room(capacity=1, dropout_seconds=5)
    seat_taken(server, dropped)
    waiting(bob, server, dropped)
    bob.route(re.compile(r"/line\?"), lambda route: route.abort())  # away: no check-ins
    expect(bob.locator("#line-status .live")).to_contain_text("Connection lost")
    # Away until the line has dropped him (dropout_seconds, then a sweep), however long
    # that takes on a busy machine: a fixed sleep let a late sweep find his poll back
    deadline = time.monotonic() + 30
    while line_length(server, dropped):
        assert time.monotonic() < deadline, "the line kept Bob, away past dropout_seconds"
        time.sleep(0.25)
    bob.unroute(re.compile(r"/line\?"))
    expect(bob.get_by_text("You dropped out of the line while you were away")).to_be_visible()

    closed = room(capacity=1, dropout_seconds=6)
    seat_taken(server, closed)
    waiting(bob, server, closed)
    server.admin(closed, status="closed")
    kept = bob.get_by_text("The room is closed to new visitors. You keep your place")
    expect(kept).to_be_visible()
    code = bob.locator(".support .code").inner_text()
    server.as_admin("POST", f"/api/admin/rooms/{closed}/remove/{code}")
    expect(bob.get_by_text("The room is closed to new visitors now")).to_be_visible()
    expect(bob.get_by_role("button", name="Join again")).to_have_count(0)
    expect(bob.get_by_role("link", name="Back to the lobby")).to_be_visible()

    deleted = room(capacity=1, dropout_seconds=6)
    seat_taken(server, deleted)
    waiting(bob, server, deleted)
    server.delete(deleted)
    expect(bob.get_by_role("heading", name=f"The room {deleted} no longer exists")).to_be_visible()
    expect(bob.get_by_role("button", name="Join again")).to_have_count(0)
    expect(bob).to_have_title(re.compile("has ended"))

    bob.goto(f"{server.url}/")  # the lobby lists each ended place with why
    places = bob.locator("#my-places")
    expect(places).to_contain_text("An organiser removed you.")
    expect(places).to_contain_text("The organisers deleted this room.")
    shoot(bob, artifacts, "lobby-ended")
    assert not axe(bob, "lobby with ended places")


def test_its_your_turn_then_the_room(server: Any, room: Any, person: Any, artifacts: Path):
    """A seat frees: the page says it's your turn (title too), then takes Bob in; the
    waiting, your-turn and room pages pass axe-core."""
    name = room(capacity=1, dropout_seconds=10)
    holder = seat_taken(server, name)
    for _ in range(6):  # a measured pace, for a measured estimate
        server.api("POST", f"/api/rooms/{name}/leave/{holder}")
        holder = seat_taken(server, name)
    bob = person()
    waiting(bob, server, name)
    expect(bob.locator(".basis")).to_contain_text("From how fast this line has moved")
    shoot(bob, artifacts, "waiting-estimate")
    problems = axe(bob, "waiting")
    sound = bob.get_by_label("Play a sound when it is my turn")
    sound.check()  # remembered in this browser, and across the polls' swaps
    with bob.expect_response(re.compile(r"/line\?")):
        pass
    expect(bob.get_by_label("Play a sound when it is my turn")).to_be_checked()
    # the page's own way in after the moment is answered 204 (a navigation to No
    # Content leaves the page as it is): the moment stays on screen, nothing hangs
    bob.route(re.compile(r"/rooms/[^/]+$"), lambda route: route.fulfill(status=204))
    server.api("POST", f"/api/rooms/{name}/leave/{holder}")
    expect(bob.get_by_role("heading", name="It's your turn!")).to_be_visible()
    expect(bob).to_have_title(f"It's your turn! · {name}")
    # Offered by the sweep, the seat is held the check-in window (dropout_seconds, 10 s);
    # found free by the page's own poll (a loaded machine's sweep came later), the poll
    # claimed it, and it is held as a seat without a page (session_seconds, 10 min)
    expect(bob.locator("#turn-left")).to_have_text(re.compile(r"^(0:(0\d|10)|9:\d\d|10:00)$"))
    shoot(bob, artifacts, "waiting-turn")
    problems += axe(bob, "your turn")
    bob.unroute(re.compile(r"/rooms/[^/]+$"))
    # "Go in now" (the page may have gone in by itself meanwhile: the link is then gone,
    # and a click would wait for it for ever)
    bob.evaluate("document.getElementById('go-in')?.click()")
    expect(bob.get_by_role("heading", name=f"You are in {name}")).to_be_visible()
    expect(bob.locator("#connection")).to_have_attribute("data-state", "live")
    shoot(bob, artifacts, "room-seat")
    problems += axe(bob, "room")
    bob.goto(f"{server.url}/")
    problems += axe(bob, "lobby")
    assert not problems, "\n".join(problems)
