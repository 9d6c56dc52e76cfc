"""Small server-rendered SVG charts for the admin panel: no script, no style attribute
(the CSP allows neither), colours from the stylesheet's classes. A series is a list of
numbers with None where no sample was taken: the line breaks there (a gap, not a zero).
Each chart comes with a sentence that says what it shows, for everyone who cannot see it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, tzinfo
from typing import NamedTuple

from markupsafe import Markup, escape

Series = Sequence[float | None]
WIDTH, HEIGHT = 360, 170  # the viewBox: about one CSS pixel per unit in a card
LEFT, RIGHT, TOP, BOTTOM = 40, 12, 10, 26  # room for the axes' labels


class Chart(NamedTuple):
    label: str
    svg: Markup
    summary: str  # one sentence: the latest value, the trend, the highest


def clock(at: float, zone: tzinfo = UTC) -> str:
    """HH:MM in the admin's time zone, as every time on the panel."""
    return datetime.fromtimestamp(at, zone).strftime("%H:%M")


def elapsed(seconds: float) -> str:
    """Time from a start: h:mm, and past a day "2 d 06:56" (never wrapping at 24 h)."""
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    return f"{days} d {hours:02d}:{minutes:02d}" if days else f"{hours}:{minutes:02d}"


def binned(values: Series, size: int, rate: bool = False) -> list[float | None]:
    """Consecutive groups of ``size`` as one point each, the last group ending with the
    last value: the mean of the samples (None if the group has none), or with ``rate``
    the group's total per original step (counts per minute stay counts per minute)."""
    start = len(values) % size
    out: list[float | None] = []
    for i in range(start, len(values), size):
        group = [v for v in values[i : i + size] if v is not None]
        if rate:
            out.append(sum(group) / size)
        else:
            out.append(sum(group) / len(group) if group else None)
    return out


def nice_ceiling(value: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten, at least ``value`` (and 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)  # pragma: no cover (the loop always returns)


def number(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}"


def line_chart(
    times: Sequence[float],
    values: Series,
    label: str,
    unit: str = "",
    zone: tzinfo = UTC,
    more: Sequence[Series] = (),
    at: Callable[[float], str] | None = None,
) -> Chart:
    """``values`` at ``times`` (seconds) as a line with a y axis from 0 and three times
    on the x axis; gaps where a value is None, a dot for a lone sample. ``more``: other
    series on the same axes (classes ``series-1``, ``series-2``...; the caption says
    what each is), the sentence of the first. ``at``: how a time is written (the clock
    in ``zone`` unless given: ``elapsed`` for times from a start)."""
    at = at or (lambda t: clock(t, zone))
    every = [values, *more]
    top = nice_ceiling(max((v for vs in every for v in vs if v is not None), default=0.0))
    step = (WIDTH - LEFT - RIGHT) / max(len(values) - 1, 1)

    def x(i: int) -> float:
        return LEFT + i * step

    def y(value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - value / top)

    parts = _axes(top, [(x(i), at(times[i])) for i in _ticks(len(times))], y)
    for k, series in enumerate(every):
        extra = f" series-{k}" if k else ""
        for run in _runs(series):
            if len(run) == 1:
                i, value = run[0]
                parts.append(
                    f'<circle class="dot-point{extra}" cx="{x(i):.1f}" cy="{y(value):.1f}" r="2"/>'
                )
            else:
                points = " ".join(f"{x(i):.1f},{y(value):.1f}" for i, value in run)
                parts.append(f'<polyline class="series{extra}" points="{points}"/>')
    return Chart(label, _svg(parts), summarise(times, values, unit, zone, at))


def scatter_chart(points: Sequence[tuple[float, float]], label: str) -> Chart:
    """(actual, predicted) pairs in seconds, drawn in minutes, with the line where a
    prediction was exactly right."""
    top = nice_ceiling(max((max(a, p) for a, p in points), default=0.0) / 60)

    def x(value: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * value / 60 / top

    def y(value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - value / 60 / top)

    ticks = [(x(v * 60), number(v)) for v in (0, top / 2, top)]
    parts = _axes(top, ticks, lambda v: y(v * 60))
    parts.append(
        f'<line class="diagonal" x1="{x(0):.1f}" y1="{y(0):.1f}" '
        f'x2="{x(top * 60):.1f}" y2="{y(top * 60):.1f}"/>'
    )
    parts.append(
        f'<text class="axis-name" x="{WIDTH - RIGHT}" y="{HEIGHT - 1}" '
        'text-anchor="end">actual, minutes</text>'
    )
    parts.append(f'<text class="axis-name" x="{LEFT + 4}" y="{TOP + 12}">estimated, minutes</text>')
    for actual, predicted in points:
        parts.append(
            f'<circle class="dot-point" cx="{x(actual):.1f}" cy="{y(predicted):.1f}" r="2.5"/>'
        )
    if not points:
        return Chart(label, Markup(""), "No admissions from the line to compare yet.")
    long = sum(p > a for a, p in points)
    summary = (
        f"{len(points)} {'admission' if len(points) == 1 else 'admissions'}: for {long} the "
        f"estimate was longer than the actual wait, for {len(points) - long} shorter or exact."
    )
    return Chart(label, _svg(parts), summary)


def summarise(
    times: Sequence[float],
    values: Series,
    unit: str = "",
    zone: tzinfo = UTC,
    at: Callable[[float], str] | None = None,
) -> str:
    """The latest value, where it came from, and the highest, in one sentence."""
    at = at or (lambda t: clock(t, zone))
    seen = [(i, v) for i, v in enumerate(values) if v is not None]
    if not seen:
        return "No samples yet."
    unit = f" {unit}" if unit else ""
    last_i, last = seen[-1]
    first_i, first = seen[0]
    high_i, high = max(seen, key=lambda pair: pair[1])
    trend = "up" if last > first else "down" if last < first else "unchanged"
    since = f"{trend} from {number(first)} at {at(times[first_i])}"
    highest = f"highest {number(high)} at {at(times[high_i])}"
    return f"{number(last)}{unit} at {at(times[last_i])}, {since}; {highest}."


def _runs(values: Series) -> list[list[tuple[int, float]]]:
    runs: list[list[tuple[int, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, value))
    return [run for run in runs if run]


def _ticks(n: int) -> list[int]:
    return sorted({0, (n - 1) // 2, n - 1}) if n else []


def _axes(top: float, xticks: list[tuple[float, str]], y: Callable[[float], float]) -> list[str]:
    """Grid lines at 0, half and the top with their numbers; the x labels."""
    bottom = HEIGHT - BOTTOM
    parts = []
    for value in (0.0, top / 2, top):
        at = y(value)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{at:.1f}" x2="{WIDTH - RIGHT}" y2="{at:.1f}"/>'
        )
        parts.append(
            f'<text class="tick" x="{LEFT - 5}" y="{at + 4:.1f}" text-anchor="end">'
            f"{number(value)}</text>"
        )
    for i, (at, text) in enumerate(xticks):
        anchor = "start" if i == 0 else "end" if i == len(xticks) - 1 else "middle"
        parts.append(
            f'<text class="tick" x="{at:.1f}" y="{bottom + 16}" text-anchor="{anchor}">'
            f"{escape(text)}</text>"
        )
    parts.append(
        f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}"/>'
    )
    return parts


def _svg(parts: list[str]) -> Markup:
    # aria-hidden: the figure's caption says in words what the drawing shows
    head = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg" '
        'aria-hidden="true" focusable="false">'
    )
    return Markup(head + "".join(parts) + "</svg>")
