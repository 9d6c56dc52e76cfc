"""Template filters every page may use, registered on the app by the factory (not as a
side effect of a blueprint): times in UTC, the panel's times in the admin's zone, short
spans of time, shares, and the panel's words for a wait and an audit entry."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from flask import Flask, request
from markupsafe import Markup

from webapp.domain.estimate import Estimate, seat_chance
from webapp.domain.pace import Rates
from webapp.views.admin.form import ZONE_COOKIE, zone_name, zone_named
from webapp.views.admin.words import audit_detail
from webapp.views.shared.words import wait_words


def duration(seconds: float) -> str:
    """3 s, 4 min 05 s, 2 h 07 min, 3 d 4 h: a span of time, short."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def utc(at: float, seconds: bool = True) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%H:%M", time.gmtime(at))


def panel_time(at: float, seconds: bool = True) -> Markup:
    """A moment on the panel in the admin's time zone (the one its script remembered,
    as the forms use; UTC until it has), named, with the time in UTC on hover.
    static/js/panel-time.js redraws it on a page drawn before the zone was known."""
    zone = zone_named(request.cookies.get(ZONE_COOKIE))
    moment = datetime.fromtimestamp(at, zone)
    shown = moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%H:%M")
    in_utc = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return Markup(
        '<time datetime="{}" title="{}" data-panel-time="{}" data-zone="{}">{} {}</time>'
    ).format(
        datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        in_utc,
        "seconds" if seconds else "minutes",
        zone_name(zone),
        shown,
        moment.strftime("%Z") if zone is not UTC else "UTC",
    )


def wait_at_back(guess: Estimate | None) -> str:
    return "not measured yet" if guess is None else wait_words(guess, "open")


def at_back(guess: Estimate | None, method: str, rates: Rates | None, waiting: int) -> str:
    """What a newcomer at the back of the line is told, as the panel says it, by the
    room's queueing_method: the wait (first come, reject's line), the chance of a seat
    (random), or none."""
    if method == "passthrough":
        return "none: everyone is let in"
    if method == "reject":
        return "none: new joins are turned away (the line moves first come)"
    if method == "random":
        if rates is None:
            return "not measured yet (drawn at random)"
        chance = seat_chance(rates, waiting + 1)
        minutes = round(chance.within / 60)
        return (
            f"{percent(chance.chance)} chance of a seat within {minutes} minutes (drawn at random)"
        )
    return wait_at_back(guess)


def percent(share: float | None) -> str:
    return "no data" if share is None else f"{share * 100:.0f} %"


FILTERS: dict[str, Callable[..., str]] = {"duration": duration, "utc": utc,
    "panel_time": panel_time, "wait_at_back": wait_at_back, "percent": percent,
    "audit_detail": audit_detail, "at_back": at_back}  # fmt: skip


def init_app(app: Flask) -> None:
    for name, function in FILTERS.items():
        app.add_template_filter(function, name)
