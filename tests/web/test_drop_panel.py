"""A scheduled drop in the admin panel (issue 24): its figures, "Start now" (a second
press does nothing), the stock form (a double submit counts once), and the schedule set
as dates and times in the admin's zone."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.web.test_admin_panel import Panel

T0 = 1_700_000_000
ROOM = "/admin/rooms/drop"


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


def test_start_now_and_its_figures(panel: Panel, visits: Any, clock: Any) -> None:
    """The page shows the draw committed and the pre-queue; Start now draws once."""
    visits.configure("drop", {"capacity": 1, "prequeue_at": T0 + 60, "starts_at": T0 + 3600})
    clock.advance(61)
    for i in range(3):
        visits.join("drop", identity=f"p{i}")
    page = panel.page(ROOM)
    assert "Scheduled drop" in page and "Start now" in page and "committed" in page
    started = panel.flashed(panel.post(f"{ROOM}/start"))
    assert "Started: 3 in the pre-queue drawn" in started
    again = panel.flashed(panel.post(f"{ROOM}/start"))
    assert "held already" in again
    audit = panel.page(f"{ROOM}/audit")
    assert "draw_reveal" in audit or "Draw revealed" in audit


def test_stock_form_counts_a_double_submit_once(panel: Panel, visits: Any) -> None:
    """Units sold with the form's request id: sent twice, counted once; left sets it;
    bad numbers are refused on the page."""
    visits.configure("drop", {"capacity": 1, "stock": 10})
    form = {"what": "sold", "number": "3", "request_id": "form-1"}
    assert "Stock left: 7" in panel.flashed(panel.post(f"{ROOM}/stock", **form))
    assert "counted once" in panel.flashed(panel.post(f"{ROOM}/stock", **form))
    left = panel.flashed(panel.post(f"{ROOM}/stock", what="left", number="0"))
    assert "Sold out" in left and "sold out" in panel.page(ROOM)
    bad = panel.post(f"{ROOM}/stock", what="sold", number="-2")
    assert bad.status_code == 400 and "Type a whole number" in bad.get_data(as_text=True)


def test_schedule_in_the_admins_zone(panel: Panel, visits: Any) -> None:
    """The settings form takes the drop's times as dates and times in the admin's zone."""
    visits.configure("drop", {"capacity": 1})
    page = panel.page(ROOM)
    assert 'name="starts_at"' in page and 'type="datetime-local"' in page
    form = {"capacity": "1", "tz": "Europe/Berlin", "starts_at": "2030-01-01T10:00",
            "prequeue_at": "2030-01-01T09:30"}  # fmt: skip
    panel.post(f"{ROOM}/settings", **form)
    settings = visits.rooms.find_settings("drop")
    assert settings.starts_at == 1893488400  # 09:00 UTC
    assert settings.prequeue_at == 1893488400 - 1800


def test_the_drop_card_says_its_phase_in_words(panel: Panel, visits: Any, clock: Any) -> None:
    """The drop's card names its phase in words (never "prequeue"), the wait at the back
    says nobody is let in before the start, and a room with no schedule and no stock
    has no drop card at all."""
    visits.configure("drop", {"capacity": 2, "prequeue_at": T0 + 60, "starts_at": T0 + 3600})
    page = panel.page(ROOM)
    assert "before the pre-queue opens" in page
    clock.advance(61)
    page = panel.page(ROOM)
    assert "pre-queue open: nobody is let in before the start" in page
    assert ">prequeue<" not in page and "none: a seat is free" not in page
    assert "the draw at the start places the pre-queue" in page
    visits.configure("plain", {"capacity": 2})
    assert 'id="drop-title"' not in panel.page("/admin/rooms/plain")
