"""A room's report (issue 31): ``/admin/rooms/<room>/report``, one printable page of
what happened (a drop's afterwards, say), and ``report.csv``, its figures a minute a
row. Read from ``RoomReports`` (webapp/domain/room_report.py); the charts are the
panel's own (``charts``), binned to 10 minutes once the report spans over two hours."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from flask import render_template
from flask.typing import ResponseReturnValue

from webapp.domain.join_refusals import REASONS
from webapp.domain.refusals import GONE_REASONS
from webapp.domain.room_report import RoomReport
from webapp.views import reports, room_reports
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import missing, panel_blueprint, zone
from webapp.views.admin.words import ENDED_WHY, REFUSED_WHY
from webapp.views.shared import charts
from webapp.views.shared.admin import csv_download

bp = panel_blueprint("admin_report", __name__)
FINE = 120  # minutes drawn a point each; longer reports a point per 10 minutes
SCATTER = 500  # newest admissions from the line drawn in the estimates' chart


@bp.get("/rooms/<room>/report")
@login_required
def report(room: str) -> ResponseReturnValue:
    settings = reports().find_settings(room)
    if settings is None:
        return missing(room)
    found = room_reports().report(room, reports().now())
    page = render_template(
        "admin/report.html", room=room, settings=settings, report=found,
        charts=report_charts(found, zone()), ended_why=ENDED_WHY, refused_why=REFUSED_WHY,
        codes=REASONS,
    )  # fmt: skip
    return page, 200, {"Cache-Control": "no-store"}


def report_charts(found: RoomReport, here: tzinfo) -> list[charts.Chart]:
    """The report's charts, in the admin's time zone."""
    size = 1 if len(found.minutes) <= FINE else 10
    times = found.minutes[len(found.minutes) % size :: size]

    def rate(values: list[float]) -> list[float | None]:
        return charts.binned(list(values), size, rate=True)

    def sampled(values: list[float | None]) -> list[float | None]:
        return charts.binned(values, size)

    ended = [sum(per) for per in zip(*found.ended.values(), strict=True)] or [0.0] * len(times)
    drawn = [
        charts.line_chart(times, rate(found.joined), "Arrivals per minute", "", here),
        charts.line_chart(times, rate(found.admitted), "Admissions per minute", "", here),
        charts.line_chart(times, rate(ended), "Ends per minute (every reason)", "", here),
        charts.line_chart(times, sampled(found.line), "People in line", "people", here),
    ]
    if found.waits:
        p50, p90, p99 = wait_series(found, times, size)
        drawn.append(
            charts.line_chart(
                times,
                p50,
                "Waits by arrival minute: p50 (solid), p90 (dashed), p99 (dotted)",
                "minutes",
                here,
                more=(p90, p99),
            )
        )
    if found.refused:
        refused = [sum(per) for per in zip(*found.refused.values(), strict=True)]
        drawn.append(charts.line_chart(times, rate(refused), "Refused joins per minute", "", here))
    if any(v is not None for v in found.stock) or found.stock_left is not None:
        drawn.append(charts.line_chart(times, sampled(found.stock), "Stock left", "units", here))
    if found.accuracy.points:
        points = [(actual, told) for _at, told, actual in found.accuracy.points[-SCATTER:]]
        drawn.append(charts.scatter_chart(points, "Estimated against actual wait"))
    return drawn


def wait_series(
    found: RoomReport, times: list[float], size: int
) -> tuple[list[float | None], list[float | None], list[float | None]]:
    """p50, p90 and p99 of the waits by arrival minute, in minutes (None where nobody
    who arrived then was admitted from the line; the largest of a bin's minutes)."""
    by_minute = {w.minute: w for w in found.waits}
    out: tuple[list[float | None], ...] = ([], [], [])
    for start in times:
        group = [by_minute[m] for m in (start + 60 * i for i in range(size)) if m in by_minute]
        for series, pick in zip(out, ("p50", "p90", "p99"), strict=True):
            series.append(max(getattr(w, pick) for w in group) / 60 if group else None)
    return out[0], out[1], out[2]


@bp.get("/rooms/<room>/report.csv")
@login_required
def report_export(room: str) -> ResponseReturnValue:
    if reports().find_settings(room) is None:
        return missing(room)
    found = room_reports().report(room, reports().now())
    return csv_download(f"report-{room}.csv", COLUMNS, csv_rows(found, zone()))


# A minute a row, every reason a column whether it happened or not (columns that stay
# put from one report to the next)
COLUMNS = (
    "Minute", "Arrivals", "Admissions",
    *(f"Ended: {ENDED_WHY[why]}" for why in GONE_REASONS),
    *(f"Refused ({code}): {REFUSED_WHY[why]}" for why, code in REASONS.items()),
    "People in line", "Seats taken", "Units sold", "Stock left",
    "Arrived and admitted from the line", "Wait p50 (s)", "Wait p90 (s)", "Wait p99 (s)",
)  # fmt: skip


def csv_rows(found: RoomReport, here: tzinfo) -> list[list[Any]]:
    """The report a minute a row; times ISO 8601 with their offset, in the admin's zone."""
    waits = {w.minute: w for w in found.waits}
    rows = []
    for i, minute in enumerate(found.minutes):
        w = waits.get(minute)
        rows.append([
            datetime.fromtimestamp(minute, here).isoformat(timespec="minutes"),
            found.joined[i], found.admitted[i],
            *(found.ended.get(why, [0.0] * len(found.minutes))[i] for why in GONE_REASONS),
            *(found.refused.get(why, [0.0] * len(found.minutes))[i] for why in REASONS),
            found.line[i], found.seats[i], found.sold[i], found.stock[i],
            w.people if w else 0, w.p50 if w else None, w.p90 if w else None,
            w.p99 if w else None,
        ])  # fmt: skip
    return [[_number(v) for v in row] for row in rows]


def _number(value: Any) -> Any:
    """Whole numbers without ".0", no value as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, float) and value == int(value):
        return int(value)
    return value
