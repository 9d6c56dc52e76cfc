"""What every page shares beyond the blueprints: a room's heading (its title and
description), times shown as clock times, and the favicon."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from flask import Blueprint, redirect, url_for
from flask.typing import ResponseReturnValue
from flask_babel import format_date, format_time

from webapp.domain.rooms import RoomNotFound
from webapp.i18n import _
from webapp.views import lobby

bp = Blueprint("extras", __name__)


class About(NamedTuple):
    title: str
    description: str
    opens_at: int | None


@bp.app_template_global()
def room_about(room: str) -> About:
    """A room's title (its address when it has none) and description, from the cached
    settings; a room that is gone is shown by its address."""
    try:
        settings = lobby().settings(room)
    except RoomNotFound:
        return About(room, "", None)
    return About(settings.title or room, settings.description, settings.opens_at)


@bp.app_template_filter()
def iso_time(when: int) -> str:
    """Unix seconds as ISO 8601 in UTC, for a <time datetime> the browser localises."""
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")


@bp.app_template_filter()
def utc_clock(when: int) -> str:
    """Unix seconds as words in UTC ("14:30 UTC on 24 November 2026"): the text shown
    without JavaScript; static/js/lobby.js puts the visitor's own time zone in."""
    moment = datetime.fromtimestamp(when, UTC)
    # Babel writes the time and the date for the visitor's language (webapp/i18n.py)
    return _(
        "%(time)s UTC on %(date)s",
        time=format_time(moment, "HH:mm"),
        date=format_date(moment, "long"),
    )


@bp.get("/favicon.ico")
def favicon() -> ResponseReturnValue:
    return redirect(url_for("static", filename="favicon.svg"), 301)
