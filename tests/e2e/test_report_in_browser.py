"""A drop's report in Chromium (issue 31): at 1280 and 390 px with no serious axe
violation, and printed: one A4 page. The drop behind it ran in the last 30 minutes on
the app's Redis, driven by the domain on a clock of its own (minutes pass in seconds),
so the report has a drop's shape: a pre-queue filling, the draw, the line served as the
stock sells, the sold-out moment, refusals along the way."""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from building import engine, visits_of
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect
from recording import RecordingPublisher
from test_panel_in_browser import PASSWORD, log_in
from test_visitor_pages import serious, watched

from tests.conftest import FakeClock
from webapp.domain.join_refusals import JoinRefusals
from webapp.domain.refusals import SoldOut, TicketGone
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

pytestmark = pytest.mark.e2e
ROOM = "launch"


@pytest.fixture(scope="module")
def panel_server(redis_url: str) -> Iterator[Server]:
    # No sweep of its own: the drop below runs on its own clock, 30 minutes behind
    with e2e_server(
        redis_url,
        "e2e-report-gunicorn.log",
        WEBAPP_ADMIN_PASSWORD=PASSWORD,
        WEBAPP_SWEEP_INTERVAL="0",
    ) as started:
        yield started


def run_drop(server: Server, redis_url: str) -> None:
    """A drop of 60 units: about 110 pre-queued over 9 minutes, drawn at minute 10, 20 more
    joining after, 20 seats turning over as people buy 1 to 3 units each, sold out near
    minute 20; refusals (too many joins, puzzles) along the way."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys(server.env["WEBAPP_REDIS_PREFIX"])  # type: ignore[index]
    clock = FakeClock(time.time() // 60 * 60 - 30 * 60)
    rooms = engine(client, keys, clock=clock)
    visits = visits_of(rooms, RecordingPublisher())
    refusals = JoinRefusals(client, keys, Scripts(client))
    t0, rng = clock(), random.Random(31)
    visits.configure(ROOM, {"capacity": 20, "prequeue_at": t0 + 30, "starts_at": t0 + 600,
                            "stock": 60, "dropout_seconds": 1800, "session_seconds": 7200,
                            "typical_stay_seconds": 120})  # fmt: skip
    tokens: list[str] = []
    for second in range(30, 25 * 60, 10):
        clock.now = t0 + second
        arriving = 2 if second < 570 else (1 if second < 1200 and second % 30 == 0 else 0)
        for _ in range(arriving):
            with contextlib.suppress(SoldOut):
                tokens.append(visits.join(ROOM, identity=f"v{len(tokens)}").ticket.token)
        if second % 60 == 0:
            refusals.count(ROOM, rng.choice(("throttled", "puzzle", "puzzle")), clock())
        if second >= 620 and second % 20 == 0:  # seats turn over: people buy and leave
            for person in visits.reports.participants(ROOM)[:3]:
                with contextlib.suppress(TicketGone):
                    visits.end(ROOM, person.token)
                left = rooms.find_settings(ROOM).stock
                if left:
                    visits.record_sold(ROOM, min(rng.randint(1, 3), left), request_id=str(second))
        if second % 60 == 0:  # pages check in (and claim the seats offered)
            for token in tokens:
                with contextlib.suppress(TicketGone):
                    visits.check_in(ROOM, token)
        visits.sweep(ROOM)
    client.close()


def test_the_report_of_a_drop(
    panel_server: Server, browser: Any, redis_url: str, tmp_path: Path
) -> None:
    """The report draws the drop, reads well at both widths, and prints on one page."""
    run_drop(panel_server, redis_url)
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors = watched(page)
    log_in(page, panel_server)
    page.goto(f"{panel_server.url}/admin/rooms/{ROOM}")
    page.get_by_role("link", name="Report").click()
    expect(page.get_by_role("heading", name=re.compile("Report of"))).to_be_visible()
    expect(page.locator("svg.chart")).to_have_count(8)
    expect(page.get_by_text("Sold out at")).to_be_visible()
    expect(page.get_by_text("Seed", exact=True)).to_be_visible()
    shots = Path(os.environ.get("WEBAPP_SHOTS") or tmp_path)  # for the closing note
    shots.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 860), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(shots / f"report-{width}.png"), full_page=True)
    assert serious(page) == []
    page.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
    page.emulate_media(media="print")
    page.screenshot(path=str(shots / "report-print.png"), full_page=True)
    pdf = page.pdf(format="A4", print_background=True)
    (shots / "report.pdf").write_bytes(pdf)
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == 1
    assert errors == [], errors
    context.close()
