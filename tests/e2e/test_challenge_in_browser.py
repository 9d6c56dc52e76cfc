"""The proof of work on join in a real browser (issues 25 and 29): with the room's
challenge on, the join button solves its ALTCHA v2 challenge (PBKDF2 in WebCrypto) in
Web Workers, with visible progress, and joins; a browser without JavaScript is told
plainly why it cannot join."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e
SHOTS = Path("/work/shots/bots")


def shoot(page: Any, name: str) -> None:
    """Screenshots at a desktop and a phone width, where the screenshots are kept."""
    if not SHOTS.is_dir():
        return
    for width, height in ((1280, 860), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)


def counts(server: Any, room: str) -> tuple[int, int]:
    found = server.api("GET", f"/api/rooms/{room}/qsize")
    return int(found["active"]), int(found["len"])


def test_the_join_button_solves_the_puzzle_in_the_page(server: Any, room: Any, person: Any):
    """Bob presses the button: the puzzle is solved in the page (its progress shown and
    said), and he is in; pressing join again later solves nothing."""
    name = room(capacity=1, challenge="on", challenge_cost=2_000)
    bob = person()
    bob.goto(f"{server.url}/rooms/{name}")
    bob.get_by_label("Your display name").fill("Bob")
    shoot(bob, "challenge-card")
    bob.set_viewport_size({"width": 1280, "height": 860})
    with bob.expect_request(lambda r: r.method == "POST" and r.url.endswith("/join")) as sent:
        bob.locator("#join").click()
    expect(bob.get_by_role("heading", name=f"You are in {name}")).to_be_visible(timeout=30_000)
    assert counts(server, name) == (1, 0)
    altcha = parse_qs(sent.value.post_data or "")["altcha"][0]  # what the page's worker found
    solution = json.loads(base64.b64decode(altcha))["solution"]
    assert 0 <= solution["counter"] <= 2_000 and len(solution["derivedKey"]) == 64
    again = server.api("GET", f"/api/rooms/{name}/challenge")  # the API still asks
    assert again["maxnumber"] == 2_000 and again["parameters"]["algorithm"] == "PBKDF2/SHA-256"


def test_progress_is_shown_while_solving(server: Any, room: Any, person: Any):
    """A puzzle with no answer in its range (its key prefix changed on the way): the bar
    and its words show, and the bar moves on, while the workers try counters."""
    name = room(capacity=1, challenge="on", challenge_cost=50_000)
    ann = person()

    def unsolvable(route: Any) -> None:
        challenge = route.fetch().json()
        challenge["parameters"]["keyPrefix"] = "ff" * 16
        route.fulfill(json=challenge)

    ann.route(re.compile(r".*/api/rooms/[^/]+/challenge$"), unsolvable)
    ann.goto(f"{server.url}/rooms/{name}")
    ann.get_by_label("Your display name").fill("Ann")
    ann.locator("#join").click()
    status = ann.locator("#challenge-status")
    expect(status).to_contain_text("solving a small puzzle")
    expect(ann.locator("#challenge-progress")).to_be_visible()
    expect(ann.locator("#join")).to_be_disabled()
    expect(status).to_contain_text(re.compile(r"\b[1-9][0-9]?%"), timeout=20_000)  # moving on
    shoot(ann, "challenge-solving")
    assert counts(server, name) == (0, 0)


def test_without_javascript_the_visitor_is_told_why(server: Any, room: Any, person: Any):
    """No JavaScript: the card says so before the button; pressing it anyway gets the
    same words with a 403, and nobody joined."""
    name = room(capacity=1, challenge="on")
    cat = person(javascript=False, width=390, height=844)
    cat.goto(f"{server.url}/rooms/{name}")
    expect(cat.locator("#challenge-noscript")).to_contain_text("That needs JavaScript")
    cat.get_by_label("Your display name").fill("Cat")
    cat.locator("#join").click()
    expect(cat.get_by_role("alert")).to_contain_text("solve a small puzzle before you join")
    expect(cat.locator("#challenge-noscript")).to_be_visible()
    assert re.search(r"/rooms/[^/]+/join$", cat.url)
    shoot(cat, "challenge-nojs")
    assert counts(server, name) == (0, 0)
