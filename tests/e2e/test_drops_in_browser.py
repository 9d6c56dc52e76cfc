"""A scheduled drop in Chromium (issue 24): a visitor opens the room before its
pre-queue (a countdown in their own time zone), joins the pre-queue when it opens, sees
their place after the start, and reads their own draw id on the draw page; and a line
told it will likely sell out, then that it did."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import visiting
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


def shoot(page: Any, artifacts: Path, name: str) -> None:
    """Screenshots at a phone's width (390 px, as the page is used here) and a
    desktop's, the whole page."""
    page.screenshot(path=str(artifacts / f"drops-{name}-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})
    page.screenshot(path=str(artifacts / f"drops-{name}-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})


def test_countdown_prequeue_start_and_draw(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Before prequeue_at the page counts down and offers no join; when it opens it
    offers the pre-queue; after the start the visitor's place shows, and the draw page
    names their draw id at the place the draw gave it."""
    name = room(capacity=1, dropout_seconds=60)
    seated = server.api("POST", f"/api/rooms/{name}/join")  # the one seat: all wait
    assert seated["status"] == "admitted"
    # Each moment of the schedule is brought near only once the checks before it are
    # done (a schedule set once, seconds apart, let a slow step run past the next)
    now = int(time.time())
    server.admin(name, prequeue_at=now + 600, starts_at=now + 1200)
    time.sleep(1.2)  # each worker reads a room's settings afresh every second
    ada = person(width=390, height=844)
    # the lobby's card says when the pre-queue opens, and offers nothing to join yet
    ada.goto(f"{server.url}/")
    card = ada.locator("li.room-card").filter(has=ada.get_by_role("heading", name=name))
    expect(card).to_contain_text("The pre-queue opens at")
    assert ada.locator(f"#go-{name}").count() == 0
    shoot(ada, artifacts, "lobby-card-before")
    ada.goto(f"{server.url}/rooms/{name}")
    expect(ada.get_by_role("heading", name="Not open yet")).to_be_visible()
    expect(ada.locator("[data-countdown]").first).to_have_text(re.compile(r"\(in \d+:\d\d\)"))
    assert ada.locator("#join").count() == 0
    shoot(ada, artifacts, "countdown")
    # the page asks again when the pre-queue opens, and offers it
    server.admin(name, prequeue_at=int(time.time()) + 3)
    time.sleep(1.2)
    ada.reload()  # counting down to the new time
    expect(ada.get_by_role("button", name="Join the pre-queue")).to_be_visible(timeout=15_000)
    ada.goto(f"{server.url}/")  # the lobby's card offers the pre-queue too
    expect(ada.locator(f"#go-{name}")).to_contain_text("Join the pre-queue")
    shoot(ada, artifacts, "lobby-card-prequeue")
    ada.goto(f"{server.url}/rooms/{name}")
    others = [server.api("POST", f"/api/rooms/{name}/join") for _ in range(4)]
    assert all(o["status"] == "prequeue" for o in others)
    visiting.enter(ada, server.url, name, "Ada")
    expect(ada.get_by_role("heading", name="You are in the pre-queue")).to_be_visible()
    draw_id = ada.locator("#draw-id").inner_text().strip()
    assert re.fullmatch(r"[0-9a-f]{12}", draw_id)
    shoot(ada, artifacts, "prequeue")
    server.admin(name, starts_at=int(time.time()) + 2)
    # the start (the sweep, within a second of starts_at): the place shows within a poll
    position = ada.locator(".position .big")
    expect(position).to_be_visible(timeout=25_000)
    place = int(position.inner_text())
    assert 1 <= place <= 5
    shoot(ada, artifacts, "drawn-place")
    ada.goto(f"{server.url}/rooms/{name}/draw")
    expect(ada.locator("#mine")).to_contain_text(draw_id)
    expect(ada.locator("#mine")).to_contain_text(f"drawn number {place}")
    expect(ada.locator(".draw-order li.mine")).to_have_text(draw_id)
    shoot(ada, artifacts, "draw")


def test_likely_to_sell_out_then_sold_out(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Two items left and three ahead: the waiting page warns; the stock runs out: the
    page says so within a poll, and a newcomer finds a sold-out page."""
    name = room(capacity=1, dropout_seconds=20, stock=2)  # a poll at least every 10 s
    for _ in range(4):
        server.api("POST", f"/api/rooms/{name}/join")
    bea = person(width=390, height=844)
    visiting.enter(bea, server.url, name, "Bea")
    expect(bea.get_by_text("Likely to sell out before your turn.")).to_be_visible()
    expect(bea.get_by_text("2 items left.")).to_be_visible()
    shoot(bea, artifacts, "likely-sold-out")
    assert server.as_admin(
        "POST", f"/api/admin/rooms/{name}/stock", {"sold": 2, "request_id": "o-1"}
    )["sold_out"]
    ended = bea.locator("[data-why=sold_out]")
    expect(ended).to_be_visible(timeout=20_000)  # within one poll
    expect(ended).to_contain_text("sold out before your turn")
    shoot(bea, artifacts, "sold-out-ended")
    cy = person(width=390, height=844)
    cy.goto(f"{server.url}/rooms/{name}")
    expect(cy.get_by_role("heading", name="Sold out")).to_be_visible()
    assert cy.locator("#join").count() == 0
    shoot(cy, artifacts, "sold-out")
