"""The operator's choice of order (issue 30) through the real server: reject's 503 with
Retry-After over HTTP (a page for browsers, JSON for the API) and in Chromium, and the
waiting page under random order (a chance, no place number) at 390 and 1280 px."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import visiting
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

WIDTHS = ((1280, 860), (390, 844))


def shoot(page: Any, artifacts: Path, name: str) -> None:
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def refused(request: urllib.request.Request) -> urllib.error.HTTPError:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    return caught.value


def test_reject_is_503_with_retry_after_over_http(server: Any, room: Any) -> None:
    """A rejecting room answers a browser's join and an API join with 503 and
    Retry-After: a page in words, and a JSON error."""
    name = room(queueing_method="reject")
    ann = server.visitor("Ann")
    with pytest.raises(urllib.error.HTTPError) as page:
        ann.join(name)
    assert page.value.code == 503 and page.value.headers["Retry-After"] == "300"
    text = page.value.read().decode()
    assert "This room is not letting anyone new in" in text
    assert page.value.headers["Content-Type"].startswith("text/html")
    join = urllib.request.Request(
        f"{server.url}/api/rooms/{name}/join",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    api = refused(join)
    assert api.code == 503 and api.headers["Retry-After"] == "300"
    assert "takes no new visitors" in json.loads(api.read())["error"]


def test_reject_in_the_browser_keeps_the_waiting(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Bob waits; the room starts rejecting: his page says he keeps his place, and Cy,
    whose room page still had the button, is turned away with the words."""
    name = room(capacity=1)
    server.api("POST", f"/api/rooms/{name}/join")  # holds the one seat
    bob, cy = person(), person()
    visiting.enter(bob, server.url, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    cy.goto(f"{server.url}/rooms/{name}")
    server.admin(name, queueing_method="reject")
    expect(bob.locator("#line-status")).to_contain_text(
        "The room is not letting anyone new in for now. You keep your place", timeout=30_000
    )
    expect(bob.locator("#line-status .big")).to_have_text("1")
    if cy.get_by_label("Your display name").count():
        cy.get_by_label("Your display name").fill("Cy")
    cy.locator("#join").click()
    expect(cy.get_by_role("heading", name="This room is not letting anyone new in")).to_be_visible()
    expect(cy.get_by_text("Nobody waiting loses their place")).to_be_visible()
    shoot(cy, artifacts, "queueing-reject")
    shoot(bob, artifacts, "queueing-reject-waiting")


def test_random_shows_a_chance_in_the_browser(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Under random order the waiting page shows the chance of a seat in the next 5
    minutes and no place number; the room's page tells a newcomer the same."""
    name = room(capacity=1, queueing_method="random")
    server.api("POST", f"/api/rooms/{name}/join")
    bob = person()
    visiting.enter(bob, server.url, name, "Bob")
    status = bob.locator("#line-status")
    expect(status).to_contain_text("drawn at random among everyone waiting")
    expect(status).to_contain_text("Your chance of a seat in the next 5 minutes: about")
    expect(bob.locator("#line-status .big")).to_have_count(0)
    expect(bob).to_have_title(re.compile(r"^Waiting for a draw · "))  # no place number
    shoot(bob, artifacts, "queueing-random-waiting")
    newcomer = person(width=390, height=844)
    newcomer.goto(f"{server.url}/rooms/{name}")
    expect(newcomer.get_by_text("Seats here go to people drawn at random")).to_be_visible()
    shoot(newcomer, artifacts, "queueing-random-join")
