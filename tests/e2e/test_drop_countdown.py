"""A drop's pre-queue page keeps its countdown (issue 35): shown through every poll,
the same on two pages at the same moment, and "Updated" says the last poll's age."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import visiting
from playwright.sync_api import expect
from test_visitor_pages import shoot, watched

pytestmark = pytest.mark.e2e

# Every 50 ms, whether the page shows its countdown (a visible, non-empty one)
WATCH = """
window.gaps = 0;
setInterval(function () {
  var c = document.querySelector("#line-status [data-countdown]");
  if (!c || c.hidden || !c.textContent.trim()) { window.gaps += 1; }
}, 50);
"""


def test_the_prequeue_countdown_holds_through_polls(server: Any, room: Any, person: Any):
    """Ada waits in the pre-queue with two tabs open: over several polls her countdown
    never blinks out, both tabs show the same time left, and the page says it was
    updated moments ago, not minutes."""
    name = room(capacity=1, dropout_seconds=60)
    server.api("POST", f"/api/rooms/{name}/join")  # the one seat: all wait
    now = int(time.time())
    server.admin(name, prequeue_at=now - 1, starts_at=now + 600)
    time.sleep(1.2)  # each worker reads a room's settings afresh every second
    ada = person(width=390, height=844)
    errors = watched(ada)
    visiting.enter(ada, server.url, name, "Ada")
    expect(ada.get_by_role("heading", name="You are in the pre-queue")).to_be_visible()
    other = ada.context.new_page()
    other.goto(f"{server.url}/rooms/{name}")
    expect(other.get_by_role("heading", name="You are in the pre-queue")).to_be_visible()
    ada.evaluate(WATCH)
    time.sleep(8)  # polls come every few seconds
    assert ada.evaluate("window.gaps") == 0
    for _ in range(3):  # the same second on both pages, each of three times
        mine, theirs = read_together(ada, other)
        assert re.fullmatch(r" ?\(in \d+:\d\d\)", mine), mine
        assert mine == theirs
    updated = ada.locator("#line-status .updated").inner_text()
    assert re.fullmatch(r"Updated (just now|[1-9] s ago)", updated), updated
    shoot(ada, "drop-prequeue")
    assert errors == [], errors


def read_together(ada: Any, other: Any, tries: int = 3) -> tuple[str, str]:
    """Both tabs' countdowns, read mid-second (a tick lasts 1 s). A loaded machine can
    run one tab's tick late, so a read that differs is made again, up to ``tries``
    times: two pages a second apart by their own arithmetic differ at every read."""
    for _ in range(tries):
        ada.evaluate("new Promise(r => setTimeout(r, 1500 - Date.now() % 1000))")
        mine = ada.locator("#line-status [data-countdown]").inner_text()
        theirs = other.locator("#line-status [data-countdown]").inner_text()
        if mine == theirs:
            break
    return mine, theirs
