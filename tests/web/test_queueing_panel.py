"""The order of admission in the panel (issue 30): chosen in the settings form, shown on
the room's page with what a newcomer is told, and a random draw's audit entry in words."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from webapp.domain.rooms import WaitingRooms
from webapp.domain.visits import Visits

ROOM = "/admin/rooms/hall"


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


def test_the_panel_switches_the_order_and_shows_the_draws(
    panel: Any, engine: WaitingRooms, visits: Visits
) -> None:
    """The settings form switches to random; the room's page names the order and a
    newcomer's chance; the audit log reads each draw as a checked place in line."""
    engine.configure("hall", {"capacity": 1})
    for i in range(4):
        visits.join("hall", identity=f"p{i}", name=f"P{i}")
    page = panel.page(ROOM)
    assert 'name="queueing_method"' in page and "Pass through" in page
    form = {
        s: "" if v is None else str(v) for s, v in engine.find_settings("hall").as_dict().items()
    }
    saved = panel.post(f"{ROOM}/settings", **{**form, "queueing_method": "random"})
    assert "Order of admission First come → Random" in panel.flashed(saved)
    page = panel.page(ROOM)
    assert '<dd id="queueing-method">Random</dd>' in page
    assert "chance of a seat within 5 minutes (drawn at random)" in page
    engine.configure("hall", {"capacity": 2})  # one seat freed: drawn
    audit = panel.page(f"{ROOM}/audit")
    assert "drawn at random: place " in audit and " of 3 in line (seed " in audit
    assert "checks out" in audit
    engine.configure("hall", {"queueing_method": "reject"})
    assert "none: new joins are turned away" in panel.page(ROOM)
