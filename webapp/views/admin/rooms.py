"""The control panel's pages (issue 11): every room at a glance (live rooms and
waitlists each with their own figures), a new room's form, a room's page and its audit
log. Thin views: parse, call ``Visits`` or read ``Reports``, render."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain.rooms import InvalidInput, valid_room_name
from webapp.domain.settings import BY_NAME, KINDS
from webapp.views import reports, visits, waitlists
from webapp.views.admin.auth import login_required
from webapp.views.admin.form import fields, posted_fields, problem, read_form
from webapp.views.admin.panel import existing, is_partial, missing, panel_blueprint, who, zone
from webapp.views.admin.room import line_context, room_page
from webapp.views.admin.words import AUDIT_KINDS, audit_detail
from webapp.views.shared.admin import csv_download

bp = panel_blueprint("admin", __name__)
AUDIT_SHOWN = 500  # newest entries on the audit page (the CSV has up to 5,000)


@bp.get("/")
@login_required
def overview() -> ResponseReturnValue:
    if is_partial("rooms"):
        return render_template("admin/_overview.html", **overview_context())
    return overview_page()


def overview_context() -> dict[str, Any]:
    """Live rooms with their line, seats and wait; waitlists with their own figures."""
    now = reports().now()
    found = reports().overview(now)
    cache = reports().cache
    live = [(room, reports().back_of_line(room.name, room.waiting), cache.rates(room.name, now))
            for room in found if room.settings.kind == "live"]  # fmt: skip
    waiting = [(room, waitlists().figures(room.name))
               for room in found if room.settings.kind == "waitlist"]  # fmt: skip
    return {"live": live, "waitlists": waiting, "now": now}


def overview_page(
    status: int = 200,
    errors: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
) -> ResponseReturnValue:
    """The overview with the form for a new room: the kind asked first (``?kind=``)."""
    kind = (form or request.args).get("kind", "live")
    shown = posted_fields(form, zone()) if form else fields({}, zone())
    page = render_template("admin/overview.html", **overview_context(), errors=errors or {},
                           values=form or {}, fields=shown,
                           kind_shown=kind if kind in KINDS else "live")  # fmt: skip
    return page, status


@bp.post("/rooms")
@login_required
def create_room() -> ResponseReturnValue:
    name = request.form.get("name", "").strip()
    kind = request.form.get("kind", "live")
    values, errors = read_form(request.form, kind if kind in KINDS else "live", zone())
    if kind not in KINDS:
        errors["kind"] = problem(BY_NAME["kind"])
    if not valid_room_name(name):
        errors = {"name": "A room name is 1 to 64 characters: a-z, 0-9 and -.", **errors}
    elif reports().find_settings(name) is not None:
        errors = {"name": f"There is already a room named {name}.", **errors}
    if errors:
        return overview_page(400, errors, request.form)
    visits().configure(name, values, who=who())
    flash(f"Created the {BY_NAME['kind'].choice_label(kind).lower()} {name}.")
    return redirect(url_for("admin.room", room=name), 303)


@bp.get("/rooms/<room>")
@login_required
def room(room: str) -> ResponseReturnValue:
    page = page_number()
    query = request.args.get("q", "").strip()[:64]
    if is_partial("line"):  # paging or searching the line with htmx
        existing(room)
        return render_template("admin/_line.html", **line_context(room, page, query))
    return room_page(room, page=page, query=query)


def page_number() -> int:
    """The line's page in the query (1 if absent); a bad or huge one is a 400."""
    text = request.args.get("page", "1")
    if not (text.isascii() and text.isdigit() and len(text) <= 7 and int(text) >= 1):
        raise InvalidInput("page must be a whole number from 1 to 9999999")
    return int(text)


@bp.get("/rooms/<room>/audit")
@login_required
def audit(room: str) -> ResponseReturnValue:
    if reports().find_settings(room) is None:
        return missing(room)
    kind = request.args.get("kind", "")
    error = "" if not kind or kind in AUDIT_KINDS else "Choose a kind from the list."
    entries = [] if error else reports().audit(room, AUDIT_SHOWN, [kind] if kind else [])
    page = render_template(
        "admin/audit.html", room=room, entries=entries, kind=kind, kinds=AUDIT_KINDS, error=error
    )
    return page, 400 if error else 200


@bp.get("/rooms/<room>/audit.csv")
@login_required
def audit_export(room: str) -> ResponseReturnValue:
    if reports().find_settings(room) is None:
        return missing(room)
    kinds = [k for k in request.args.getlist("kind") if k]
    entries = reports().audit(room, count=5000, kinds=kinds)
    here = zone()  # the admin's, as the log's page shows it; ISO 8601, with its offset
    rows = (
        [
            datetime.fromtimestamp(entry.at, here).isoformat(timespec="seconds"),
            AUDIT_KINDS.get(entry.kind, entry.kind),
            entry.who,
            entry.code,
            entry.name,
            audit_detail(entry),
            entry.customer,
        ]
        for entry in entries
    )
    return csv_download(f"audit-{room}.csv", AUDIT_COLUMNS, rows)


# The panel's CSV speaks as the log's page does (the API's keeps the stored values)
AUDIT_COLUMNS = ("Time", "Kind", "Who", "Support code", "Name", "Detail", "Customer")
