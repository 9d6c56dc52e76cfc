"""The panel says how many in line are past their check-in window but not yet dropped
(issue 26): "people ahead" may count them until the next upkeep."""

from __future__ import annotations

from tests.web import test_admin_panel as base
from tests.web.test_admin_panel import ROOM, line_of

app, rooms = base.app, base.rooms  # panel, visits, clock: the conftest's


def test_the_panel_counts_those_past_their_window(panel, rooms, visits, clock):
    """People whose window ran out with nothing run since are counted, then dropped."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 30})
    line_of(visits, 4)
    assert 'In line past their check-in window</dt><dd id="overdue">0<' in panel.page(ROOM)
    clock.advance(31)
    page = panel.page(ROOM)
    assert 'In line past their check-in window</dt><dd id="overdue">3<' in page
    visits.sweep("hall")
    assert 'In line past their check-in window</dt><dd id="overdue">0<' in panel.page(ROOM)
