"""The language picker in a real browser: German pages, German words from the script."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


def shoot(page: Any, artifacts: Path, name: str) -> None:
    """Screenshots at a desktop and a phone width, kept in artifacts/."""
    for width, height in ((1280, 860), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"{name}-{width}.png"), full_page=True)


def test_picker_switches_to_german_and_the_script_follows(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """The footer's picker turns the pages German (<html lang="de">), the choice sticks
    across pages, and the text the script writes (the tab's title, the turn's moment) is
    German too; then Spanish."""
    name = room(capacity=1, typical_stay_seconds=120, title="Konzertsaal",
                description="Bitte seien Sie freundlich.")  # fmt: skip
    held = server.api("POST", f"/api/rooms/{name}/join")  # the one seat is taken: Ada waits
    ada = person(width=390, height=844)
    ada.goto(f"{server.url}/rooms/{name}")
    expect(ada.locator("html")).to_have_attribute("lang", "en")

    ada.locator("#language-choice").select_option("de")
    ada.get_by_role("button", name="Change language").click()
    expect(ada.locator("html")).to_have_attribute("lang", "de")
    expect(ada.get_by_role("button", name="Sprache wechseln")).to_be_visible()
    shoot(ada, artifacts, "lobby-de")
    ada.get_by_label("Ihr Anzeigename").fill("Ada")
    ada.locator("#join").click()

    expect(ada).to_have_url(re.compile(rf"/rooms/{name}$"))
    expect(ada.locator("html")).to_have_attribute("lang", "de")
    expect(ada.locator("#line-status .big")).to_have_text("1")
    expect(ada.get_by_role("link", name="Die Schlange verlassen")).to_be_visible()
    # The script sets the title after each poll, from the page's German words
    expect(ada).to_have_title(re.compile(r"^Platz 1 in der Schlange · "), timeout=20_000)
    expect(ada.locator(".basis")).to_contain_text("üblichen Aufenthalts")  # typical_stay_seconds
    shoot(ada, artifacts, "waiting-de")

    server.api("POST", f"/api/rooms/{name}/leave/{held['token']}")  # Ada's turn
    expect(ada.locator("#turn-go")).to_contain_text("Sie werden hineingebracht", timeout=20_000)
    expect(ada.get_by_role("heading", name="Sie sind in Konzertsaal")).to_be_visible()
    expect(ada.locator("#connection")).to_have_attribute("data-state", "live")
    shoot(ada, artifacts, "room-de")

    ada.locator("#language-choice").select_option("es")
    ada.get_by_role("button", name="Sprache wechseln").click()
    expect(ada.locator("html")).to_have_attribute("lang", "es")
    expect(ada.get_by_role("link", name="Salir de la sala")).to_be_visible()
