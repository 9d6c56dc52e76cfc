"""A plan of a drop (issue 34), for the admin's API and the panel's Plan page alike:
the room's settings and measured figures as the inputs' defaults (``plans.defaults``),
the request read over them, the simulation run (``webapp.domain.planner``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webapp.domain import pace, planner, plans
from webapp.domain.rooms import RoomNotFound
from webapp.views import reports


def plan_defaults(room: str) -> dict[str, Any]:
    """A plan's starting inputs: the room's settings and what it measured."""
    settings = reports().find_settings(room)
    if settings is None:
        raise RoomNotFound(f"no room named {room!r}")
    rates = pace.rates(reports().stats(room), reports().now(), settings.capacity,
                       settings.typical_stay_seconds)  # fmt: skip
    return plans.defaults(settings, rates)


def make_plan(room: str, body: Mapping[str, Any]) -> tuple[planner.PlanInput, planner.Plan]:
    """The plan of ``body`` (the API's JSON, the panel's form) over the room's defaults."""
    wanted = plans.read(body, plan_defaults(room))
    return wanted, planner.simulate(wanted)
