"""The visitor's pages of issue 35, in a real browser against gunicorn: giving an email
leaves the waiting page whole, and the room's title is what people read."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import visiting
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e
SHOTS = Path(os.environ.get("WEBAPP_SHOTS", "/work/shots/i35"))
SERIOUS = ("serious", "critical")


@pytest.fixture(scope="module", autouse=True)
def mail_works(server: Any) -> None:
    """Mail can be sent (as a running mailer records it), before the module's first page."""
    server.mailer_says(ok=True)


def seat_taken(server: Any, room: str) -> str:
    """Someone outside the browser holds the seat; returns their ticket."""
    ticket = server.api("POST", f"/api/rooms/{room}/join")
    assert ticket["status"] == "admitted"
    return str(ticket["token"])


def watched(page: Any) -> list[str]:
    """Every console error and uncaught exception of ``page``, as they happen."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def shoot(page: Any, name: str) -> None:
    """Screenshots at 390 and 1280 px into SHOTS (when it exists), for the closing note."""
    if not SHOTS.is_dir():
        return
    size = page.viewport_size
    for width, height in ((390, 844), (1280, 860)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def serious(page: Any) -> list[str]:
    """axe-core's serious or critical violations on the page as it is, at both widths."""
    from axe_playwright_python.sync_playwright import Axe

    size, found = page.viewport_size, []
    for width, height in ((390, 844), (1280, 860)):
        page.set_viewport_size({"width": width, "height": height})
        found += [
            f"{width}: {v['id']} ({v['impact']})"
            for v in Axe().run(page).response["violations"]
            if v["impact"] in SERIOUS
        ]
    page.set_viewport_size(size)
    return found


def test_giving_an_email_leaves_the_waiting_page_whole(server: Any, room: Any, person: Any) -> None:
    """Bob gives his email while first in line: one confirmation, his controls stay,
    the page keeps checking in ("Updated" stays fresh), nothing breaks in the console,
    and when the seat frees he sees his turn within about 5 seconds."""
    name = room(capacity=1, dropout_seconds=30, grace_seconds=2)
    holder = seat_taken(server, name)
    bob = person()
    errors = watched(bob)
    visiting.enter(bob, server.url, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    bob.get_by_label("Also email me when it is my turn (optional)").fill("bob@example.org")
    bob.get_by_role("button", name="Email me").click()
    told = bob.get_by_text("When a seat is free for you, we also email bob@example.org")
    expect(told).to_have_count(1)
    time.sleep(7)  # a few polls (2 s apart, first in line)
    expect(told).to_have_count(1)
    expect(bob.get_by_role("button", name="Stop the email")).to_have_count(1)
    expect(bob.get_by_label("Play a sound when it is my turn")).to_be_visible()
    updated = bob.locator("#line-status .updated").inner_text()
    assert re.search(r"just now|[1-4] s ago", updated), updated
    shoot(bob, "waiting-email-given")
    assert serious(bob) == []
    server.api("POST", f"/api/rooms/{name}/leave/{holder}")
    freed = time.monotonic()
    expect(bob.locator("#line-status[data-state=turn]")).to_have_count(1, timeout=15_000)
    assert time.monotonic() - freed < 5.5
    expect(bob.get_by_role("heading", name=re.compile("^You are in"))).to_be_visible()
    assert errors == [], errors


def admin_post(server: Any, path: str) -> None:
    request = urllib.request.Request(
        f"{server.url}{path}",
        data=b"{}",
        method="POST",
        headers={
            "Authorization": f"Bearer {server.admin_token}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        json.load(reply)


def test_people_read_the_rooms_title_not_its_address(server: Any, room: Any, person: Any) -> None:
    """A room titled "Sneaker drop": the waiting page's tab, the turn screen, the room's
    tab and heading and the live ended heading all say the title, never the address."""
    name = room(capacity=1, dropout_seconds=30, grace_seconds=2, title="Sneaker drop")
    holder = seat_taken(server, name)
    bob = person()
    visiting.enter(bob, server.url, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    expect(bob).to_have_title("Number 1 in line · Sneaker drop")
    server.api("POST", f"/api/rooms/{name}/leave/{holder}")
    expect(bob.locator("#line-status[data-state=turn]")).to_contain_text(
        "A seat in Sneaker drop is free for you."
    )
    expect(bob).to_have_title("It's your turn! · Sneaker drop")
    shoot(bob, "turn-title")
    expect(bob.get_by_role("heading", name="You are in Sneaker drop")).to_be_visible()
    expect(bob).to_have_title("Sneaker drop · Waiting room")
    expect(bob.locator("#connection")).to_have_attribute("data-state", "live")
    code = bob.locator(".support .code").inner_text()
    admin_post(server, f"/api/admin/rooms/{name}/remove/{code}")
    expect(bob.get_by_role("heading", name="Your seat in Sneaker drop has ended")).to_be_visible()
    expect(bob.locator("#room-heading")).to_have_text("Sneaker drop")
    expect(bob).to_have_title("Your seat has ended · Sneaker drop")
    assert name not in bob.locator("main").inner_text()
    shoot(bob, "room-ended-title")


def test_the_room_page_says_a_seat_is_being_offered(server: Any, room: Any, person: Any) -> None:
    """The one seat is offered to someone whose page is closed: a newcomer to the room,
    which looks full with nobody waiting, is told why and for how long at most."""
    name = room(capacity=1, dropout_seconds=30)
    holder = seat_taken(server, name)
    waiter = server.api("POST", f"/api/rooms/{name}/join")
    assert waiter["status"] == "waiting"
    server.api("POST", f"/api/rooms/{name}/leave/{holder}")  # the seat goes to the waiter
    cy = person()
    cy.goto(f"{server.url}/rooms/{name}")
    said = cy.locator(".join-card .offered")
    expect(said).to_contain_text("A seat is being offered to someone who was waiting.")
    expect(said).to_contain_text(re.compile(r"within (\d+|30) seconds?, it goes to the next"))
    shoot(cy, "join-offered")
    assert serious(cy) == []
