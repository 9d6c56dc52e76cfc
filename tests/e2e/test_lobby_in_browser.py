"""The lobby, identity and extras in a real browser (issue 12, part C): the lobby with
titles and states, updating itself; a name change seen by another member; a place
moved to another browser; error pages. axe-core on each, light and dark, 390 and
1280 px; screenshots kept in artifacts/."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

SERIOUS = ("serious", "critical")
WIDTHS = ((390, 844), (1280, 860))


def axe_and_shoot(page: Any, artifacts: Path, name: str) -> list[str]:
    """Serious or critical axe violations at both widths in both colour schemes, and a
    screenshot of each (<name>-<width>.png, <name>-<width>-dark.png)."""
    from axe_playwright_python.sync_playwright import Axe

    found = []
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            results = Axe().run(page)
            found += [
                f"{name} {width} {scheme}: {v['id']} ({v['impact']}): "
                + ", ".join(str(n["target"]) for n in v["nodes"][:3])
                for v in results.response["violations"]
                if v["impact"] in SERIOUS
            ]
        page.screenshot(path=str(artifacts / f"{name}-{width}-dark.png"), full_page=True)
        page.emulate_media(color_scheme="light")
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})
    return found


def named(page: Any, server: Any, name: str, path: str = "/") -> None:
    """Names the person on ``path``: the lobby's form, or a room's page, whose button
    then joins."""
    page.goto(f"{server.url}{path}")
    page.get_by_label("Your display name").fill(name)
    page.locator(".name-form button, #join").click()


def test_lobby_and_error_pages(server: Any, room: Any, person: Any, artifacts: Path) -> None:
    """Open rooms first, paused and closed ones say why and when they reopen; the lobby
    updates itself; the lobby and error pages pass axe."""
    opens = int(time.time()) + 3 * 3600
    hall = room(title="Concert hall", description="Doors open at eight. Be kind to the staff.")
    room(title="Book club", description="Monthly reading.", status="paused", opens_at=opens)
    room(title="Archive", status="closed", description="Old recordings.")
    page = person()
    named(page, server, "Alexandria Ocasio-Longname the Third")
    cards = page.locator(".room-card h2")
    titles = cards.all_inner_texts()
    assert titles.index("Concert hall") < titles.index("Book club") < titles.index("Archive")
    paused = page.locator(".room-card", has_text="Book club")
    expect(paused).to_contain_text("Paused: nobody is let in right now")
    expect(paused.locator("time")).not_to_contain_text("UTC on")  # the visitor's clock
    expect(paused.get_by_role("link", name=re.compile("^Enter"))).to_have_count(0)
    found = axe_and_shoot(page, artifacts, "lobby")
    server.admin(hall, status="paused")  # the lobby sees it without a reload
    card = page.locator(".room-card", has_text="Concert hall")
    expect(card.locator(".badge")).to_have_text("Paused")
    page.goto(f"{server.url}/rooms/no-such-room")
    expect(page).to_have_title("We could not find that room · Waiting room")
    found += axe_and_shoot(page, artifacts, "error-404")
    closed = room(status="closed", opens_at=opens)
    page.goto(f"{server.url}/rooms/{closed}")
    expect(page.get_by_text("Opens again at")).to_be_visible()
    found += axe_and_shoot(page, artifacts, "error-closed")
    assert not found, "\n".join(found)


def test_a_name_change_is_seen_by_another_member(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Ann renames herself from the header; Bob, in the same room, sees the new name."""
    hall = room(capacity=2)
    ann, bob = person(), person(width=390)
    named(ann, server, "Ann", f"/rooms/{hall}")
    named(bob, server, "Bob", f"/rooms/{hall}")
    expect(bob.locator("#participants")).to_contain_text("Ann")
    ann.locator(".who summary").click()
    found = axe_and_shoot(ann, artifacts, "name-change")
    assert not found, "\n".join(found)
    ann.get_by_label("New display name").fill("Annie Hall")
    ann.get_by_role("button", name="Save").click()
    expect(ann.locator("header .who-name")).to_contain_text("Annie Hall")
    expect(bob.locator("#participants")).to_contain_text("Annie Hall")


def test_a_place_moves_to_another_browser(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """The offer has a QR code and a link; the other browser takes the place with its
    number; the old tab says it moved; the link is refused a second time."""
    hall = room(capacity=1, title="Concert hall")
    ann = person()
    named(ann, server, "Ann", f"/rooms/{hall}")
    bob = person()
    named(bob, server, "Bob", f"/rooms/{hall}")
    expect(bob).to_have_title(re.compile("Number 1 in line"))
    offer = bob.context.new_page()
    offer.goto(f"{server.url}/rooms/{hall}/move")
    expect(offer.locator(".qr svg")).to_be_visible()
    link = offer.get_by_role("textbox", name="Move link").input_value()
    found = axe_and_shoot(offer, artifacts, "move-offer")
    phone = person(width=390)
    phone.goto(link)
    phone.get_by_role("button", name="Move my place here").click()
    expect(phone).to_have_title(re.compile("Number 1 in line"))
    expect(bob.get_by_text("Your place moved to another device")).to_be_visible(timeout=15_000)
    found += axe_and_shoot(bob, artifacts, "moved")
    again = person()
    again.goto(link)
    again.get_by_role("button", name="Move my place here").click()
    expect(again.get_by_role("heading", name="This link was already used")).to_be_visible()
    assert not found, "\n".join(found)


def test_a_full_line_counts_down_and_tries_again(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """The line-too-long page counts its Retry-After down and asks again by itself."""
    hall = room(capacity=1, max_line_length=1)
    for name in ("Ann", "Bob"):
        server.visitor(name).join(hall)
    page = person()
    named(page, server, "Cy", f"/rooms/{hall}")
    expect(page).to_have_title("The line is too long right now · Waiting room")
    expect(page.locator("[data-retry-after]")).to_contain_text("Trying again in")
    found = axe_and_shoot(page, artifacts, "error-line-full")
    assert not found, "\n".join(found)
    server.admin(hall, max_line_length=5)
    page.locator("[data-retry-after]").evaluate("box => box.querySelector('a, button').click()")
    expect(page).to_have_title(re.compile("Number 2 in line"))
