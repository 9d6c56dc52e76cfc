"""Plan a drop before it happens (issue 34): the panel's "Plan" page of a room, and the
plan the API answers (``POST /api/admin/rooms/<room>/plan``), both from
``shared.plans``. Each input
defaults to the room's settings and what it measured (``plans.defaults``); the
simulation is ``webapp.domain.planner``. A plan changes nothing, so the page's form is
a GET: a plan can be bookmarked and shared."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from flask import render_template, request
from flask.typing import ResponseReturnValue

from webapp.domain import planner, plans
from webapp.domain.refusals import InvalidInput
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import panel_blueprint
from webapp.views.shared import charts
from webapp.views.shared.plans import plan_defaults

bp = panel_blueprint("admin_plan", __name__)

# The form's fields: name, label, the body's property, how the text is read.
PERCENT, WHOLE, NUMBER, MINUTES, OPTIONAL = "percent", "whole", "number", "minutes", "optional"
FORM = (
    ("total", "People arriving", WHOLE),
    ("first_minute", "Of them in the first minute (%)", PERCENT),
    ("duration", "Arriving over (minutes)", MINUTES),
    ("prequeue", "In the pre-queue at the start", WHOLE),
    ("capacity", "Capacity (seats)", WHOLE),
    ("admit_per_minute", "Admissions per minute (empty: no limit)", OPTIONAL),
    ("stay_seconds", "Mean stay in a seat (seconds)", NUMBER),
    ("stay_cs2", "Variation of stays (0: all alike, 1: exponential)", NUMBER),
    ("leave_share", "Who leave the line before their turn (%)", PERCENT),
    ("patience_seconds", "They leave after (seconds)", NUMBER),
    ("stock", "Stock (empty: not tracked)", OPTIONAL),
    ("units_per_admission", "Units per admission", WHOLE),
)
METHODS = (("fifo", "In line order"), ("random", "In random order"),
           ("passthrough", "Let everyone through"), ("reject", "Refuse when full"))  # fmt: skip


def form_values(start: Mapping[str, Any]) -> dict[str, str]:
    """The form as first shown: the room's defaults as text."""
    shape = start["shape"]
    values = {
        "total": shape["total"], "first_minute": round(100 * shape["first_minute_share"], 1),
        "duration": round(shape["duration_seconds"] / 60, 1), "prequeue": start["prequeue"],
        "leave_share": round(100 * start["leave_share"], 1),
    }  # fmt: skip
    for name, _label, _kind in FORM:
        values.setdefault(name, start.get(name))
    out = {k: "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
           for k, v in values.items()}  # fmt: skip
    out["queueing_method"] = str(start["queueing_method"])
    return out


def body_of(form: Mapping[str, str]) -> dict[str, Any]:
    """The API's body from the form's text; InvalidInput names a field that is no
    number."""
    read: dict[str, Any] = {}
    for name, label, kind in FORM:
        text = form.get(name, "").strip().replace(",", "")
        if text == "" and kind == OPTIONAL:
            read[name] = None
            continue
        try:
            value = float(text)
        except ValueError:
            raise InvalidInput(f"{label}: enter a number") from None
        if not math.isfinite(value):
            raise InvalidInput(f"{label}: enter a number")
        if kind == MINUTES:  # whole seconds, at least one
            value = max(round(value * 60), 1) if value > 0 else value
        read[name] = value / 100 if kind == PERCENT else value
    shape = {"total": read.pop("total"), "first_minute_share": read.pop("first_minute"),
             "duration_seconds": read.pop("duration")}  # fmt: skip
    return {**read, "shape": shape, "queueing_method": form.get("queueing_method", "fifo")}


def in_words(made: planner.Plan) -> str:
    """The plan in a sentence: "The last of 50,000 waits about 42 minutes; stock runs
    out at minute 18." """
    served = made.arrivals * made.served_share
    people = f"{round(made.arrivals):,}"
    if made.waits.max <= 0:
        words = f"Nobody of {people} waits"
    else:
        words = (
            f"Half of {people} wait under {span(made.waits.p50)}, nine in ten under "
            f"{span(made.waits.p90)}, and the last one let in waits about {span(made.waits.max)}"
        )
    if made.sold_out_minute is not None:
        words += f"; the stock runs out at minute {made.sold_out_minute}"
    if made.refused > 0.5:
        words += f"; {round(made.refused):,} are turned away"
    if served < made.arrivals - 0.5:
        words += f"; {made.served_share:.0%} are let in"
    if not made.finished:
        words += " (the line had not emptied when the plan ended)"
    return words + "."


def span(seconds: float) -> str:
    if seconds < 120:
        return f"{round(seconds)} seconds"
    if seconds < 5400:
        return f"{round(seconds / 60)} minutes"
    return f"{seconds / 3600:.1f} hours"


def plan_charts(made: planner.Plan) -> list[charts.Chart]:
    """Line over time and wait by arrival minute, from the rows; x: time from the start."""
    times = [row[0] * 60.0 for row in made.by_minute]
    line = [float(round(row[3])) for row in made.by_minute]  # whole people
    waits = [None if row[4] is None else round(row[4] / 60, 1) for row in made.by_minute]
    return [
        charts.line_chart(times, line, "People in line", "people", at=charts.elapsed),
        charts.line_chart(
            times, waits, "Median wait by arrival minute, minutes", "minutes", at=charts.elapsed
        ),
    ]


@bp.get("/rooms/<room>/plan")
@login_required
def plan_page(room: str) -> ResponseReturnValue:
    start = plan_defaults(room)
    values = {**form_values(start), **{k: v for k, v in request.args.items() if len(v) < 40}}
    context: dict[str, Any] = {"room": room, "fields": FORM, "methods": METHODS, "error": None,
                               "values": values, "measured": start["measured"]}  # fmt: skip
    try:
        wanted = plans.read(body_of(values), start)
    except InvalidInput as error:
        context["error"] = str(error)
        return render_template("admin/plan.html", **context), 400
    made = planner.simulate(wanted)
    context.update(plan=made, words=in_words(made), charts=plan_charts(made))
    return render_template("admin/plan.html", **context)
