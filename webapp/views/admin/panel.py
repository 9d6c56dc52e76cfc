"""What every blueprint of the control panel shares: the blueprint itself (under /admin,
with the panel's template context and its answer to the engine's refusals), and the
small steps of its views (who acts, the room or 404, back to the page the form was on).

The panel's pages: ``admin`` (the rooms, a room's page, its audit log),
``admin_settings`` (a room's settings, status, deletion), ``admin_people`` (admissions,
moves, removals, the notice) and ``admin_waitlist`` (a waitlist's own actions); the app
factory registers each. Every POST answers 303 back to the page with a flash saying what
happened; bad input re-renders the page with the errors (400) and changes nothing.
"""

from __future__ import annotations

import contextlib
from datetime import tzinfo
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import RequestEntityTooLarge

from webapp.domain.reports import PAGE, Person
from webapp.domain.rooms import RoomError, RoomNotFound
from webapp.domain.settings import BY_NAME, RoomSettings
from webapp.domain.visits import MAX_NOTICE
from webapp.views import reports
from webapp.views.admin.auth import current_admin
from webapp.views.admin.form import FORM_GROUPS, ZONE_COOKIE, shown, zone_name, zone_named
from webapp.views.admin.words import STATUS_ACTIONS
from webapp.views.shared.admin import MAX_ADMIT
from webapp.views.shared.errors import error_response


def panel_blueprint(name: str, import_name: str) -> Blueprint:
    """A blueprint of the panel: its pages get the panel's context, and a refusal of
    the engine becomes a flash on the page the admin came from."""
    bp = Blueprint(name, import_name, url_prefix="/admin")
    bp.context_processor(panel_context)
    bp.register_error_handler(RoomError, refused)
    return bp


def panel_context() -> dict[str, Any]:
    return {"admin": current_admin(), "BY_NAME": BY_NAME, "FORM_GROUPS": FORM_GROUPS,
            "MAX_NOTICE": MAX_NOTICE, "MAX_ADMIT": MAX_ADMIT, "PAGE": PAGE,
            "STATUS_ACTIONS": STATUS_ACTIONS, "zone": zone_name(zone()),
            "setting_words": setting_words}  # fmt: skip


def setting_words(name: str, value: Any) -> str:
    """A room's setting in words ("15 minutes", "no limit")."""
    return shown(BY_NAME[name], value)


def refused(error: RoomError) -> ResponseReturnValue:
    """The engine said no (the room is gone, the person left or is no longer waiting):
    nothing changed; say why on the page the admin came from."""
    room = (request.view_args or {}).get("room", "")
    if request.method == "GET":  # a page: nothing to go back to
        return missing(room) if isinstance(error, RoomNotFound) else error_response(400, str(error))
    message = str(error)
    flash(f"Nothing changed: {message[:1].upper()}{message[1:]}.", "error")
    if isinstance(error, RoomNotFound) or not room:
        return redirect(url_for("admin.overview"), 303)
    return back(room)


def who() -> str:
    return current_admin() or ""


def zone() -> tzinfo:
    """The admin's time zone: the one the form's times were typed in, else the one the
    panel's script remembered in a cookie; UTC without either (admin_form.py)."""
    typed = None
    with contextlib.suppress(RequestEntityTooLarge):  # the 413 page of a too large form
        typed = request.form.get("tz")
    return zone_named(typed or request.cookies.get(ZONE_COOKIE))


def is_partial(target: str) -> bool:
    """An htmx request for one element of the page (not a history restore)."""
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-Target") == target
        and "HX-History-Restore-Request" not in request.headers
    )


def missing(room: str) -> ResponseReturnValue:
    return render_template("admin/missing.html", room=room), 404


def existing(room: str) -> RoomSettings:
    settings = reports().find_settings(room)
    if settings is None:
        raise RoomNotFound(f"no room named {room!r}")
    return settings


def back(room: str) -> ResponseReturnValue:
    """303 to the room's page, on the page of the line (or the search) the form was on."""
    page = whole_number(request.form.get("page", ""), 2, 10**7)
    query = request.form.get("q", "").strip()[:64] or None
    return redirect(url_for("admin.room", room=room, page=page, q=query), 303)


def someone(room: str, code: str) -> Person | None:
    """The person with this support code, or None with a flash saying they are gone."""
    person = reports().find(room, code)
    if person is None:
        existing(room)
        flash(
            f"Nothing changed: nobody with the support code {code[:12]} is here any more.", "error"
        )
    return person


def whole_number(text: str, low: int, high: int) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if low <= value <= high else None
