"""The panel's actions on a scheduled drop (issue 24): the stock (units sold, counted
once per form, or what is left) and "start now". Each calls ``Visits``, which audits
it under the admin's name and tells the room. The figures are ``admin/_drop.html``."""

from __future__ import annotations

from flask import flash, request
from flask.typing import ResponseReturnValue

from webapp.views import visits
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import back, existing, panel_blueprint, who, whole_number
from webapp.views.admin.room import room_page
from webapp.views.shared.admin import MAX_REQUEST_ID

bp = panel_blueprint("admin_drops", __name__)


@bp.post("/rooms/<room>/stock")
@login_required
def stock(room: str) -> ResponseReturnValue:
    """Sold units (the form's request id counts them once) or the number left."""
    existing(room)
    what = request.form.get("what", "")
    number = whole_number(request.form.get("number", ""), 0, 1_000_000_000)
    if what not in ("sold", "left") or number is None or (what == "sold" and number > 10**6):
        error = "Type a whole number: units sold (up to 1,000,000) or left."
        return room_page(room, 400, {"number": error}, request.form)
    if what == "sold":
        request_id = request.form.get("request_id", "")[:MAX_REQUEST_ID]
        report = visits().record_sold(room, number, request_id, who=who())
    else:
        report = visits().set_stock(room, number, who=who())
    if report.replay:
        flash("That form was already sent: the units were counted once.", "message")
    elif report.left is not None and report.left <= 0:
        flash("Sold out: everyone waiting was told; joins are refused.", "message")
    else:
        flash(f"Stock left: {report.left if report.left is not None else 'not tracked'}.")
    return back(room)


@bp.post("/rooms/<room>/start")
@login_required
def start(room: str) -> ResponseReturnValue:
    """Start now: the draw held at once (a second press does nothing)."""
    existing(room)
    drawn = visits().start_drop(room, who=who())
    if drawn < 0:
        flash("The draw was held already: nothing changed.", "error")
    else:
        flash(f"Started: {drawn:,} in the pre-queue drawn and placed at the head of the line.")
    return back(room)
