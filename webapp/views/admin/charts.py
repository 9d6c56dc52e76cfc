"""The charts of a room's page, assembled from ``Reports``: the last hour a point a
minute, the last day a point per 10 minutes, of the figures the room's kind has (a
live room: the line, the seats taken, admissions; a waitlist: sign-ups, admissions),
and how right the wait estimates were. The SVG itself is ``charts``."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any, NamedTuple

from webapp.views import reports
from webapp.views.shared import charts

SCATTER_SHOWN = 500  # newest admissions drawn in the accuracy chart
SPANS = (("Last hour", 60, 1), ("Last 24 hours", 1440, 10))


class Figure(NamedTuple):
    key: str  # the figure in Reports.history
    label: str
    unit: str
    rate: bool  # a count per minute (else a sample)


FIGURES = {
    "live": (
        Figure("w", "People in line", "people", False),
        Figure("s", "Seats taken", "seats", False),
        Figure("admitted", "Admissions per minute", "", True),
    ),
    "waitlist": (
        Figure("joined", "Sign-ups per minute", "", True),
        Figure("admitted", "Admissions per minute", "", True),
    ),
}


def history_charts(room: str, now: float, kind: str, zone: tzinfo) -> list[dict[str, Any]]:
    """Each span's charts, and the numbers behind them as table rows; times in ``zone``
    (the admin's)."""
    figures = FIGURES.get(kind, FIGURES["live"])
    spans = []
    for title, minutes, size in SPANS:
        history = reports().history(room, now, minutes)
        starts = [m or 0.0 for m in history["minute"]]
        times = starts[len(starts) % size :: size]  # each point's first minute
        series = [charts.binned(history[f.key], size, rate=f.rate) for f in figures]
        drawn = [
            charts.line_chart(times, values, f.label, f.unit, zone)
            for f, values in zip(figures, series, strict=True)
        ]
        rows = list(zip(times, *series, strict=True))
        spans.append({"title": title, "slug": f"m{minutes}", "charts": drawn, "rows": rows,
                      "columns": [f.label for f in figures]})  # fmt: skip
    return spans


def accuracy(room: str, now: float) -> dict[str, Any]:
    hour, day = reports().accuracy(room, now, 3600), reports().accuracy(room, now, 86400)
    points = [(actual, predicted) for _at, predicted, actual in day.points[-SCATTER_SHOWN:]]
    chart = charts.scatter_chart(points, "Estimated against actual wait, last 24 hours")
    return {"windows": [("Last hour", hour), ("Last 24 hours", day)], "chart": chart}
