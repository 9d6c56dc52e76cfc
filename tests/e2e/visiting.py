"""What a person does in the browser tests, as they do it: open a room's page and press
its one button (naming themselves first, the first time), leave and answer the question
that asks once. A visit alone never joins (issue 21)."""

from __future__ import annotations

from typing import Any


def enter(page: Any, url: str, room: str, name: str) -> None:
    """Opens ``url``/rooms/``room`` and joins with its button (the name field is there
    only for someone without a name yet)."""
    page.goto(f"{url}/rooms/{room}")
    if page.get_by_label("Your display name").count():
        page.get_by_label("Your display name").fill(name)
    page.locator("#join").click()


def leave(page: Any, what: str = "Leave the line") -> None:
    """Presses "Leave the line" (or "Leave the room") and answers the dialog yes. The
    page's deferred scripts (the dialog's listener) have run by DOMContentLoaded: a
    click before it follows the link to the leave page of a page without scripts."""
    page.wait_for_load_state("domcontentloaded")
    page.get_by_role("link", name=what).click()
    page.get_by_role("dialog").get_by_role("button", name=what).click()
