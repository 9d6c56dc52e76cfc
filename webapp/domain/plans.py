"""What a plan request means (issue 34): the planner's inputs read from a mapping (the
API's JSON body, the panel's form), each defaulting to the room's settings and its
measured figures. Pure functions: no Redis, no Flask. The simulation is
``webapp.domain.planner``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from webapp.domain.pace import Rates
from webapp.domain.planner import MAX_ARRIVALS, QUEUEING_METHODS, PlanInput, shaped_arrivals
from webapp.domain.refusals import InvalidInput
from webapp.domain.settings import RoomSettings

MAX_POINTS = 100_000  # [second, count] pairs in one request
MAX_SECOND = 7 * 86400  # the latest arrival second
MAX_STAY = 7 * 86400
DEFAULT_SHAPE = {"total": 1000, "first_minute_share": 0.5, "duration_seconds": 600}
FIELDS = ("arrivals", "shape", "capacity", "admit_per_minute", "stay_seconds", "stay_cs2",
          "leave_share", "patience_seconds", "stock", "units_per_admission", "prequeue",
          "queueing_method")  # fmt: skip


def defaults(settings: RoomSettings, rates: Rates | None) -> dict[str, Any]:
    """The inputs a plan of this room starts from: its settings, and what it measured
    (the seat time per release and its variation, the share who stay in line) where it
    measured anything; otherwise its typical stay (15 minutes unless set)."""
    measured = rates is not None and rates.basis == "measured" and rates.service > 0
    stay = (rates.capacity / rates.service) if measured and rates else None
    return {
        "shape": dict(DEFAULT_SHAPE),
        "capacity": settings.capacity,
        "admit_per_minute": settings.admit_per_minute,
        "stay_seconds": round(stay or settings.typical_stay_seconds or 900, 1),
        "stay_cs2": round(rates.cs2, 2) if measured and rates else 1.0,
        "leave_share": round(1.0 - rates.stay, 3) if measured and rates else 0.0,
        "patience_seconds": 300,
        "stock": settings.stock,
        "units_per_admission": 1,
        "prequeue": 0,
        "queueing_method": getattr(settings, "queueing_method", "fifo"),
        "dropout_seconds": settings.dropout_seconds,
        "max_checkin_seconds": settings.max_checkin_seconds,
        "measured": measured,
    }


def _number(body: Mapping[str, Any], name: str, low: float, high: float, whole: bool,
            fallback: Any, nullable: bool = False) -> Any:  # fmt: skip
    value = body.get(name, fallback)
    if value is None and nullable:
        return None
    if isinstance(value, float) and whole and value.is_integer():
        value = int(value)
    kind = "a whole number" if whole else "a number"
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or (whole and not isinstance(value, int)) or not math.isfinite(value):
        raise InvalidInput(f"{name} must be {kind} from {low:g} to {high:g}")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be {kind} from {low:g} to {high:g}")
    return value


def _arrivals(body: Mapping[str, Any], start: Mapping[str, Any]) -> list[tuple[int, float]]:
    given = body.get("arrivals")
    if given is not None:
        if not isinstance(given, list) or not 1 <= len(given) <= MAX_POINTS:
            raise InvalidInput(
                f"arrivals must be a list of 1 to {MAX_POINTS} [second, count] pairs"
            )
        out = []
        for pair in given:
            if not isinstance(pair, list) or len(pair) != 2:
                raise InvalidInput("each of arrivals must be a [second, count] pair")
            second = _number({"second": pair[0]}, "second", 0, MAX_SECOND, True, 0)
            count = _number({"count": pair[1]}, "count", 0, MAX_ARRIVALS, False, 0)
            out.append((second, float(count)))
        if sum(n for _, n in out) > MAX_ARRIVALS:
            raise InvalidInput(f"at most {MAX_ARRIVALS:,} arrivals in one plan")
        return out
    shape = body.get("shape", start["shape"])
    if not isinstance(shape, Mapping):
        raise InvalidInput("shape must be an object: total, first_minute_share, duration_seconds")
    unknown = [k for k in shape if k not in DEFAULT_SHAPE]
    if unknown:
        raise InvalidInput(f"unknown property of shape {str(unknown[0])[:40]!r}")
    total = _number(shape, "total", 0, MAX_ARRIVALS, True, DEFAULT_SHAPE["total"])
    share = _number(shape, "first_minute_share", 0, 1, False, DEFAULT_SHAPE["first_minute_share"])
    duration = _number(shape, "duration_seconds", 1, MAX_SECOND, True,
                       DEFAULT_SHAPE["duration_seconds"])  # fmt: skip
    return shaped_arrivals(total, share, duration)


def read(body: Mapping[str, Any], start: Mapping[str, Any]) -> PlanInput:
    """The planner's inputs from ``body`` over the room's ``start`` (``defaults``);
    InvalidInput names the first one that is wrong."""
    unknown = [name for name in body if name not in FIELDS]
    if unknown:
        raise InvalidInput(f"unknown property {str(unknown[0])[:40]!r}; known: {', '.join(FIELDS)}")
    method = body.get("queueing_method", start["queueing_method"])
    if method not in QUEUEING_METHODS:
        raise InvalidInput(f"queueing_method must be one of {', '.join(QUEUEING_METHODS)}")
    n = {
        "capacity": _number(body, "capacity", 1, 1_000_000, True, start["capacity"]),
        "admit_per_minute": _number(
            body, "admit_per_minute", 1, 1_000_000, True, start["admit_per_minute"], nullable=True
        ),
        "stay_seconds": _number(body, "stay_seconds", 1, MAX_STAY, False, start["stay_seconds"]),
        "stay_cs2": _number(body, "stay_cs2", 0, 100, False, start["stay_cs2"]),
        "leave_share": _number(body, "leave_share", 0, 1, False, start["leave_share"]),
        "patience_seconds": _number(
            body, "patience_seconds", 1, MAX_STAY, False, start["patience_seconds"]
        ),
        "stock": _number(body, "stock", 0, 1_000_000_000, True, start["stock"], nullable=True),
        "units_per_admission": _number(
            body, "units_per_admission", 1, 1_000_000, True, start["units_per_admission"]
        ),
        "prequeue": _number(body, "prequeue", 0, MAX_ARRIVALS, True, start["prequeue"]),
    }
    arrivals = _arrivals(body, start)
    if sum(c for _, c in arrivals) + n["prequeue"] > MAX_ARRIVALS:
        raise InvalidInput(f"at most {MAX_ARRIVALS:,} arrivals in one plan")
    return PlanInput(arrivals=tuple(arrivals), queueing_method=method,
                     dropout_seconds=int(start.get("dropout_seconds", 30)),
                     max_checkin_seconds=int(start.get("max_checkin_seconds", 300)),
                     **n)  # fmt: skip


def inputs_of(plan: PlanInput) -> dict[str, Any]:
    """A plan's inputs as the API answers them (arrivals as a total and a span)."""
    seconds = [s for s, n in plan.arrivals if n > 0]
    return {
        "arrivals_total": round(sum(n for _, n in plan.arrivals), 2),
        "arrivals_span_seconds": (max(seconds) - min(seconds) + 1) if seconds else 0,
        "capacity": plan.capacity,
        "admit_per_minute": plan.admit_per_minute,
        "stay_seconds": plan.stay_seconds,
        "stay_cs2": plan.stay_cs2,
        "leave_share": plan.leave_share,
        "patience_seconds": plan.patience_seconds,
        "stock": plan.stock,
        "units_per_admission": plan.units_per_admission,
        "prequeue": plan.prequeue,
        "queueing_method": plan.queueing_method,
    }
