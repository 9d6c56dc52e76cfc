"""The panel's pages of issue 35 in Chromium: one time zone (the admin's) on every page,
at 390 and 1280 px, with no serious axe violation and a quiet console."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import visiting
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect
from test_panel_in_browser import PASSWORD, log_in
from test_visitor_pages import SHOTS, serious, watched

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def panel_server(redis_url: str) -> Iterator[Server]:
    with e2e_server(
        redis_url,
        "e2e-panel-pages-gunicorn.log",
        WEBAPP_ADMIN_PASSWORD=PASSWORD,
        WEBAPP_SWEEP_INTERVAL="0.25",
    ) as started:
        yield started


@pytest.fixture
def berliner(browser: Any) -> Iterator[Any]:
    """An admin whose browser is in Berlin's time zone, on their first visit."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 860}, timezone_id="Europe/Berlin"
    )
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def shoot(page: Any, name: str) -> None:
    if not Path(SHOTS).is_dir():
        return
    for width, height in ((390, 844), (1280, 860)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def test_the_panel_speaks_the_admins_time_zone(
    panel_server: Server, person: Any, berliner: Any
) -> None:
    """From the first page on, "Figures as of", the charts' times and the audit log are
    in Berlin time (CET), with UTC on hover."""
    name = f"e2e-tz{int(time.time() * 1000) % 10**8}"
    panel_server.admin(name, capacity=1)
    visiting.enter(person(), panel_server.url, name, "Ann")
    errors = watched(berliner)
    log_in(berliner, panel_server)
    berliner.goto(f"{panel_server.url}/admin/rooms/{name}")
    figures = berliner.locator(".muted", has_text="Figures as of").locator("time")
    expect(figures).to_have_text(re.compile(r"^\d\d:\d\d CES?T$"))
    assert (figures.get_attribute("title") or "").endswith(" UTC")
    berliner.get_by_text("The numbers behind the charts of the last hour").click()
    first = berliner.locator(".chart-data tbody th").first
    expect(first).to_have_text(re.compile(r"^\d\d:\d\d CES?T$"))
    shoot(berliner, "panel-room")
    assert serious(berliner) == []
    berliner.goto(f"{panel_server.url}/admin/rooms/{name}/audit")
    expect(berliner.locator("td, th").filter(has_text="CET").first).to_be_visible()
    expect(berliner.get_by_text("times in UTC")).to_have_count(0)
    shoot(berliner, "panel-audit")
    assert serious(berliner) == []
    assert errors == [], errors


def test_a_drops_panel_card_says_its_phase(panel_server: Server, berliner: Any) -> None:
    """A room with a scheduled drop and stock: its panel page says where the schedule is
    in words (before the pre-queue: nobody can join yet), its pre-queue, stock and sales;
    no serious axe violation; photographed at 390 and 1280 px."""
    name = f"e2e-drop{int(time.time() * 1000) % 10**8}"
    now = int(time.time())
    panel_server.admin(name, capacity=5, prequeue_at=now + 600, starts_at=now + 1200, stock=40)
    errors = watched(berliner)
    log_in(berliner, panel_server)
    berliner.goto(f"{panel_server.url}/admin/rooms/{name}")
    card = berliner.locator("section", has=berliner.get_by_role("heading", name="Scheduled drop"))
    expect(card.locator("#drop-phase")).to_contain_text("before the pre-queue opens")
    expect(card).to_contain_text("Stock left")
    expect(card).to_contain_text("40")
    shoot(berliner, "panel-drop")
    assert serious(berliner) == []
    assert errors == [], errors
