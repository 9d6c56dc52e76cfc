"""A room's report (issue 31), such as a drop's afterwards: per minute, arrivals,
admissions, ends by reason, refusals by reason, the line's length, the stock; the waits
by arrival minute (p50, p90, p99); how right the estimates were; a drop's draw. Read
from what Redis keeps (the history hash, a day of minutes; the accuracy stream, its
newest 5,000 admissions from the line, with their waits and, where one was made, the
wait predicted at the join; the drop's hash), through ``Reports`` and
``Drops``: reads only. No Flask here."""

from __future__ import annotations

import math
from typing import NamedTuple

from webapp.domain.drops import DrawRecord, Drops
from webapp.domain.join_refusals import REASONS
from webapp.domain.refusals import GONE_REASONS
from webapp.domain.reports import Accuracy, Reports

DAY = 86400
EMPTY_SPAN = 60  # minutes shown when nothing was recorded yet


class Waits(NamedTuple):
    """The waits of the people admitted from the line who arrived in one minute."""

    minute: float  # its start (Unix seconds)
    people: int
    p50: float
    p90: float
    p99: float


class RoomReport(NamedTuple):
    room: str
    now: float
    minutes: list[float]  # each minute's start, oldest first, to the current minute
    joined: list[float]  # arrivals per minute (seated at once or put in line)
    admitted: list[float]
    ended: dict[str, list[float]]  # reason -> per minute (the reasons that happened)
    refused: dict[str, list[float]]  # reason -> per minute (the reasons that happened)
    line: list[float | None]  # the line's length, sampled once a minute (None: no sample)
    seats: list[float | None]
    sold: list[float]  # units reported sold per minute
    stock: list[float | None]  # the stock left (None: not tracked or no sample)
    waits: list[Waits]  # by arrival minute, the minutes anyone arrived in
    overall: Waits | None  # every wait of the report (minute: the first arrival's)
    accuracy: Accuracy
    draw: DrawRecord | None  # a drop's, once committed
    stock_left: int | None  # now (None: not tracked)
    sold_out_at: float | None


class RoomReports:
    def __init__(self, reports: Reports, drops: Drops) -> None:
        self.reports, self.drops = reports, drops

    def report(self, room: str, now: float) -> RoomReport:
        """The room's report, from its first recorded minute of the last day to ``now``'s."""
        kept = self.reports.minutes(room)  # RoomNotFound for a bad name
        last = int(now // 60)
        recorded = [m for m in kept if last - DAY // 60 < m <= last]
        first = min(recorded, default=last - EMPTY_SPAN + 1)
        span = list(range(first, last + 1))

        def counts(figure: str) -> list[float]:
            return [kept.get(m, {}).get(figure, 0.0) for m in span]

        def samples(figure: str) -> list[float | None]:
            return [kept.get(m, {}).get(figure) for m in span]

        ended = {why: counts(f"ended_{why}") for why in GONE_REASONS}
        refused = {why: counts(f"refused_{why}") for why in REASONS}
        window = now - first * 60 + 60
        accuracy = self.reports.accuracy(room, now, window)
        waits = self.reports.waits(room, now, window)
        draw = self.drops.draw(room)
        left, _sold, _admissions = self.drops.stock(room)
        return RoomReport(
            room=room,
            now=now,
            minutes=[float(m * 60) for m in span],
            joined=counts("joined"),
            admitted=counts("admitted"),
            ended={why: series for why, series in ended.items() if any(series)},
            refused={why: series for why, series in refused.items() if any(series)},
            line=samples("w"),
            seats=samples("s"),
            sold=counts("sold"),
            stock=samples("stock"),
            waits=waits_by_arrival(waits),
            overall=overall(waits),
            accuracy=accuracy,
            draw=draw if draw.state else None,
            stock_left=left,
            sold_out_at=self.drops.sold_out_at(room),
        )


def waits_by_arrival(points: list[tuple[float, float]]) -> list[Waits]:
    """(admitted at, wait) points grouped by the minute each person arrived in
    (admitted at less the wait), with each minute's percentiles."""
    groups: dict[int, list[float]] = {}
    for at, actual in points:
        groups.setdefault(int((at - actual) // 60), []).append(max(actual, 0.0))
    out = []
    for minute in sorted(groups):
        waits = sorted(groups[minute])
        out.append(
            Waits(
                float(minute * 60),
                len(waits),
                percentile(waits, 50),
                percentile(waits, 90),
                percentile(waits, 99),
            )
        )
    return out


def overall(points: list[tuple[float, float]]) -> Waits | None:
    """Every wait of ``points`` at once (None if there are none)."""
    if not points:
        return None
    waits = sorted(actual for _at, actual in points)
    first = min(at - actual for at, actual in points)
    return Waits(float(first // 60 * 60), len(waits), *(percentile(waits, p) for p in (50, 90, 99)))


def percentile(ordered: list[float], p: float) -> float:
    """The nearest-rank percentile of a sorted, non-empty list."""
    rank = max(math.ceil(p / 100 * len(ordered)), 1)
    return ordered[rank - 1]
