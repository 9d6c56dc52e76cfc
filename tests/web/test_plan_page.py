"""The panel's Plan page (issue 34): the room's figures as inputs, the plan in words,
figures and charts; a wrong input is a 400 page that says which; behind the login."""

from __future__ import annotations

import pytest
from flask import Flask

from webapp.views.shared import charts

PLAN = "/admin/rooms/hall/plan"


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


def test_the_plan_page_starts_from_the_room(panel, engine):
    """The form holds the room's capacity and stock; the default plan is drawn: the
    sentence, the figures, both charts and the numbers behind them."""
    engine.configure("hall", {"capacity": 12, "stock": 500, "typical_stay_seconds": 300})
    page = panel.page(PLAN)
    assert 'id="plan-capacity" name="capacity" type="text" inputmode="decimal" value="12"' in page
    assert 'name="stock" type="text" inputmode="decimal" value="500"' in page
    assert 'name="stay_seconds" type="text" inputmode="decimal" value="300"' in page
    assert "Half of 1,000 wait under" in page and "the stock runs out at minute" in page
    assert page.count("<svg") == 2 and "Median wait by arrival minute" in page
    assert '<caption id="plan-data">By minute from the start' in page


def test_a_changed_input_plans_again(panel, engine):
    """60 at once at 5 seats of 10 s: half under 50 s, the last about 110 s."""
    engine.configure("hall", {"capacity": 1})
    form = {"total": "60", "first_minute": "100", "duration": "0.01", "capacity": "5",
            "stay_seconds": "10", "stay_cs2": "0"}  # fmt: skip
    page = panel.page(PLAN, query_string=form)
    words = page.split('id="plan-words">')[1][:300]
    assert "Half of 60 wait under 50 seconds" in words and "about 110 seconds" in words, words


WRONG = [
    ("capacity", "lots", "Capacity (seats): enter a number"),
    ("capacity", "0", "capacity must be"),
    ("queueing_method", "lifo", "queueing_method must be"),
]


@pytest.mark.parametrize(("field", "text", "words"), WRONG)
def test_a_wrong_input_says_which(panel, engine, field, text, words):
    """A word where a number goes, or a number out of bounds: 400, the page says which."""
    engine.configure("hall", {"capacity": 3})
    response = panel.client.get(PLAN, query_string={field: text})
    assert response.status_code == 400
    assert words in response.get_data(as_text=True)


def test_the_plan_needs_a_login_and_a_room(app, panel, engine):
    """Logged out: to the login form. An unknown room: the panel's 404 page."""
    engine.configure("hall", {})
    assert app.test_client().get(PLAN).status_code == 302
    assert panel.client.get("/admin/rooms/nowhere/plan").status_code == 404


def test_the_room_page_links_to_its_plan(panel, engine):
    """A live room's page links to its plan."""
    engine.configure("hall", {})
    assert f'href="{PLAN}"' in panel.page("/admin/rooms/hall")


def test_the_charts_count_time_from_the_start_past_a_day() -> None:
    """A plan's times are from its start and do not wrap at 24 hours: a drop of six
    days reads "6 d 06:56" where a clock would have said 06:56."""
    assert charts.elapsed(0) == "0:00"
    assert charts.elapsed(3 * 3600 + 28 * 60) == "3:28"
    assert charts.elapsed((150 * 60 + 56) * 60) == "6 d 06:56"
    drawn = charts.line_chart([0.0, 86_400.0 * 2 + 60], [5.0, 2.0], "Line", at=charts.elapsed)
    assert "2 d 00:01" in drawn.svg and "at 2 d 00:01" in drawn.summary
