"""What every page shares beyond the blueprints: a room's heading (its title and
description), the footer's sentence on how the room's line is ordered, times shown as
clock times, and the favicon."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from flask import Blueprint, redirect, url_for
from flask.typing import ResponseReturnValue
from flask_babel import format_date, format_time

from webapp.domain.rooms import RoomNotFound
from webapp.views import reports
from webapp.views.shared.words import duration
from webapp.web.i18n import _

bp = Blueprint("extras", __name__)
bp.add_app_template_filter(duration, "duration_words")  # "5 minutes", in the visitor's language


class About(NamedTuple):
    title: str
    description: str
    opens_at: int | None
    site_url: str = ""  # a site room's site


@bp.app_template_global()
def room_about(room: str) -> About:
    """A room's title (its address when it has none) and description, from the cached
    settings; a room that is gone is shown by its address."""
    try:
        settings = reports().settings(room)
    except RoomNotFound:
        return About(room, "", None)
    return About(settings.title or room, settings.description, settings.opens_at, settings.site_url)


@bp.app_template_global()
def line_order(room: str | None) -> str:
    """The footer's one sentence on the order people are let in, true for the page's
    room (a waitlist may go by referral points or by lot)."""
    if room is None:
        return _("Live rooms let people in first come, first served.")
    try:
        settings = reports().settings(room)
    except RoomNotFound:
        return _("Live rooms let people in first come, first served.")
    if settings.kind == "waitlist" and settings.ordering == "priority":
        return _("This waitlist goes by referral points first, then by who signed up first.")
    if settings.kind == "waitlist" and settings.ordering == "lottery":
        return _("This waitlist's order is drawn by lot, in a draw anyone can check.")
    if settings.kind == "live" and settings.queueing_method == "random":
        return _(
            "Each free seat goes to someone drawn at random among those waiting here, in a "
            "draw the organisers can check."
        )
    if settings.kind == "live" and settings.queueing_method == "passthrough":
        return _("Everyone is let in at once for now.")
    if settings.starts_at is not None:
        return _(
            "Who is here before the start is put in line by a draw anyone can check; "
            "later arrivals join behind, first come, first served."
        )
    return _("A fair line, first come first served.")


@bp.app_template_filter()
def iso_time(when: int) -> str:
    """Unix seconds as ISO 8601 in UTC, for a <time datetime> the browser localises."""
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")


@bp.app_template_filter()
def utc_clock(when: int) -> str:
    """Unix seconds as words in UTC ("14:30 UTC on 24 November 2026"), the time as the
    visitor's locale writes it (2:30 PM in the US): the text shown without JavaScript;
    static/js/shared.js puts the visitor's own time zone in."""
    moment = datetime.fromtimestamp(when, UTC)
    # Babel writes the time and the date for the visitor's language (webapp/web/i18n.py)
    return _(
        "%(time)s UTC on %(date)s",
        time=format_time(moment, "short"),
        date=format_date(moment, "long"),
    )


@bp.get("/favicon.ico")
def favicon() -> ResponseReturnValue:
    return redirect(url_for("static", filename="favicon.svg"), 301)
