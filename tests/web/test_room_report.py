"""A room's report (issue 31): /admin/rooms/<room>/report and its CSV, right after a
scripted drop (a pre-queue, the draw, admissions from the line, stock sold out, a join
refused), with every figure where it belongs."""

from __future__ import annotations

import contextlib
import csv
import io
from datetime import datetime
from typing import Any

import pytest
from flask import Flask

from tests.web.test_admin_panel import Panel
from webapp.domain.refusals import TicketGone
from webapp.views.admin.report import COLUMNS

T0 = 1_700_000_000  # the FakeClock's start: 20 s into a minute
REPORT = "/admin/rooms/drop/report"


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


def minute(at: float) -> float:
    return at // 60 * 60


@pytest.fixture
def drop(visits: Any, clock: Any, panel: Panel) -> dict[str, Any]:
    """The drop: 6 pre-queued, drawn at the start (placed in the line, 2 let in at
    once), one seat given up and taken by the head of the line 30 s after the start, 5
    units sold out in two reports (the 3 still waiting end sold out), then a join
    refused; what happened when."""
    visits.configure(
        "drop", {"capacity": 2, "prequeue_at": T0 + 60, "starts_at": T0 + 120, "stock": 5}
    )
    clock.advance(61)
    tokens = [visits.join("drop", identity=f"v{i}").ticket.token for i in range(6)]
    arrived = clock()

    def wait(seconds: int) -> None:
        for _ in range(seconds // 10):
            clock.advance(10)
            for token in tokens:
                with contextlib.suppress(TicketGone):
                    visits.check_in("drop", token)
            visits.sweep("drop")

    wait(60)  # the start: drawn by the sweep, which places all six in the line at once
    started = clock()
    seated = [p.token for p in visits.reports.participants("drop")]
    waiting = [t for t in tokens if t not in seated]
    wait(30)
    visits.end("drop", seated[0])  # the head of the line is offered the seat
    head = min(waiting, key=lambda t: visits.check_in("drop", t).ticket.position)
    assert visits.check_in("drop", head).ticket.state == "admitted"  # claimed
    admitted_at = clock()
    visits.record_sold("drop", 3, request_id="r1")
    wait(60)
    visits.record_sold("drop", 2, request_id="r2")  # sold out: the other 3 end
    sold_out = clock()
    refused = panel.client.post("/api/rooms/drop/join")
    assert refused.status_code == 410
    return {"arrived": arrived, "started": started, "admitted_at": admitted_at,
            "sold_out": sold_out, "draw": visits.drops.draw("drop")}  # fmt: skip


def test_report_page_after_a_drop(panel: Panel, drop: dict[str, Any]) -> None:
    """The page's totals, ends and refusals by reason, waits, the draw and the
    sold-out moment, and its charts."""
    page = panel.page(REPORT)
    assert "Report of" in page and ">drop<" in page
    totals = figures(page)
    assert totals["Arrivals"] == "6"
    assert totals["Admissions"] == "3"  # two seated by the draw, one from the line
    assert totals["Ends"] == "4"  # one left, three sold out
    assert totals["Refused joins"] == "1"
    assert totals["Stock left"] == "0"
    assert "Sold out at" in totals
    assert 'Ended: Left</th><td class="num">1' in page
    assert 'Ended: Sold out</th><td class="num">3' in page
    assert 'Refused (410): Sold out</th><td class="num">1' in page
    draw = drop["draw"]
    assert draw.state == "drawn" and draw.commitment in page and draw.seed in page
    assert "Entries drawn</dt><dd>6" in page
    # waits in line, from the placement at the start: 0, 0 and 30 s
    assert "3 admitted from the line. Their waits: p50 0.0 min, p90 0.5 min" in page
    assert "Nobody was told an estimate" in page  # a pre-queue predicts none
    for title in ("Arrivals per minute", "People in line", "Waits by arrival minute",
                  "Refused joins per minute", "Stock left"):  # fmt: skip
        assert title in page
    assert page.count('<svg class="chart"') == 7  # no estimates told: no scatter


def test_report_csv_after_a_drop(panel: Panel, drop: dict[str, Any]) -> None:
    """A minute a row from the first arrival to now, ISO 8601 times; every count in the
    minute it happened; the waits in the minute the person arrived."""
    reply = panel.client.get(f"{REPORT}.csv")
    assert reply.status_code == 200 and reply.mimetype == "text/csv"
    assert 'filename="report-drop.csv"' in reply.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(reply.get_data(as_text=True))))
    assert tuple(rows[0]) == COLUMNS
    at = {datetime.fromisoformat(row["Minute"]).timestamp(): row for row in rows}
    assert min(at) == minute(drop["arrived"])  # from the first minute recorded
    assert all(b - a == 60 for a, b in zip(sorted(at), sorted(at)[1:], strict=False))
    assert at[minute(drop["arrived"])]["Arrivals"] == "6"
    assert sum(int(row["Arrivals"]) for row in rows) == 6
    assert minute(drop["admitted_at"]) == minute(drop["started"])  # 121 and 151 s in
    assert at[minute(drop["started"])]["Admissions"] == "3"  # two at the start, one later
    assert sum(int(row["Admissions"]) for row in rows) == 3
    assert at[minute(drop["sold_out"])]["Ended: Sold out"] == "3"
    assert at[minute(drop["sold_out"])]["Refused (410): Sold out"] == "1"
    assert at[minute(drop["sold_out"])]["Units sold"] == "2"
    assert at[minute(drop["sold_out"])]["Stock left"] == "0"
    assert sum(int(row["Units sold"] or 0) for row in rows) == 5
    placed = at[minute(drop["started"])]  # in the line from the start
    assert placed["Arrived and admitted from the line"] == "3"
    assert placed["Wait p50 (s)"] == "0"
    assert float(placed["Wait p99 (s)"]) == drop["admitted_at"] - drop["started"] == 30
    # sampled by the first sweep of each minute: none in line before the start (the
    # pre-queue is not the line), 3 at the next minute's (the sold-out came later in it)
    assert [row["People in line"] for row in rows] == ["0", "0", "3"]


def test_report_of_an_unknown_room_and_without_login(app: Flask, panel: Panel) -> None:
    """No such room: the panel's 404 page; without a login: to the login page."""
    assert panel.client.get("/admin/rooms/nowhere/report").status_code == 404
    assert panel.client.get("/admin/rooms/nowhere/report.csv").status_code == 404
    anonymous = app.test_client()
    assert anonymous.get(REPORT).status_code in (302, 303)
    assert anonymous.get(f"{REPORT}.csv").status_code in (302, 303)


def test_the_room_page_links_its_report(panel: Panel, visits: Any) -> None:
    """A live room's page links its report; an empty room's report still renders."""
    visits.configure("hall", {"capacity": 1})
    assert 'href="/admin/rooms/hall/report"' in panel.page("/admin/rooms/hall")
    page = panel.page("/admin/rooms/hall/report")
    assert "No place ended and no join was refused." in page
    assert "Nobody was admitted from the line" in page


def test_report_scores_the_estimates(panel: Panel, visits: Any, clock: Any) -> None:
    """A live room's report: the estimate told at the join against the actual wait."""
    visits.configure("hall", {"capacity": 1, "typical_stay_seconds": 60})
    first = visits.join("hall", identity="a").ticket.token
    second = visits.join("hall", identity="b").ticket.token
    assert visits.rooms.written()  # the prediction told at the join, written behind
    for _ in range(4):
        clock.advance(10)
        visits.check_in("hall", second)
    visits.end("hall", first)
    assert visits.check_in("hall", second).ticket.state == "admitted"
    page = panel.page("/admin/rooms/hall/report")
    assert "1 admitted from the line. Their waits: p50 0.7 min" in page
    assert "For the 1 told an estimate when they joined, it was off by" in page
    assert "Estimated against actual wait" in page and "for 1 the estimate was" in page


def figures(page: str) -> dict[str, str]:
    """The totals' <dt>name</dt><dd>value</dd> pairs."""
    import re

    found = re.findall(r"<dt>([^<]+)</dt><dd>([^<]*)", page)
    return dict(found)
