"""A room's settings, its status and its deletion, from the panel. Each change goes
through ``Visits`` (the script, which audits it with the old and new values, the
cache, the room's open pages told)."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain.rooms import RoomNotFound
from webapp.domain.settings import BY_NAME, KINDS, STATUSES
from webapp.views import visits
from webapp.views.admin.auth import login_required
from webapp.views.admin.form import changes_in_words, problem, read_form
from webapp.views.admin.panel import back, existing, panel_blueprint, who, zone
from webapp.views.admin.room import room_page

bp = panel_blueprint("admin_settings", __name__)


@bp.post("/rooms/<room>/settings")
@login_required
def save(room: str) -> ResponseReturnValue:
    """The fields of the room's kind (or of the kind chosen on the form); only the
    values that differ are written, and the flash says each old and new value."""
    current = existing(room)
    kind = request.form.get("kind", current.kind)
    if kind not in KINDS:
        return room_page(room, 400, {"kind": problem(BY_NAME["kind"])}, request.form, typed=True)
    values, errors = read_form(request.form, kind, zone())
    if errors:
        return room_page(room, 400, errors, request.form, typed=True)
    was = current.as_dict()
    changes = {name: value for name, value in values.items() if was[name] != value}
    if not changes:
        flash("Nothing to save: every setting already had that value.")
        return back(room)
    visits().configure(room, changes, who=who())
    flash(f"Saved: {changes_in_words(was, changes, zone())}.")
    return back(room)


@bp.post("/rooms/<room>/status")
@login_required
def set_status(room: str) -> ResponseReturnValue:
    existing(room)
    status = request.form.get("status", "")
    if status not in STATUSES:
        return room_page(room, 400, {"status": "Choose open, paused or closed."})
    visits().set_status(room, status, who=who())
    flash(f"The room is {status} now.")
    return back(room)


@bp.post("/rooms/<room>/delete")
@login_required
def delete_room(room: str) -> ResponseReturnValue:
    if not visits().delete(room, who=who()):
        raise RoomNotFound(f"no room named {room!r}")
    flash(f"Deleted the room {room}, with its line, seats and audit log.")
    return redirect(url_for("admin.overview"), 303)
