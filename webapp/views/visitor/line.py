"""The waiting page's own requests: its poll (the check-in), leaving (asked once, on a
page of its own without JavaScript, in a dialog with it) and the email that tells the
visitor when a seat is free (a form of its own without JavaScript, so that no reload
ever wipes what is being typed).

The poll answers ``/rooms/<room>/line?t=<public id>``: that page's own ticket decides,
so a page whose place ended says so and why, and never joins.
"""

from __future__ import annotations

import contextlib

from flask import Blueprint, flash, render_template, request
from flask.typing import ResponseReturnValue

from webapp.domain.emails import MAX_EMAIL, normalise_email
from webapp.domain.rooms import InvalidInput, RoomNotFound, TicketNotFound, public_id
from webapp.views import reports, visits
from webapp.views.shared import own_page, place, session
from webapp.views.shared.words import explain
from webapp.web.i18n import _, current_language

bp = Blueprint("line", __name__)
bp.after_request(own_page.room_headers)  # a room's own page: its styles and images


@bp.get("/rooms/<room>/line")
def status(room: str) -> ResponseReturnValue:
    token, ended = session.page_ticket(room, request.args.get("t"))
    if token is not None:
        return place.poll(room, token)
    if ended is None:  # an old bookmark of the waiting page: the room's page shows all
        return place.to_gate(room)
    return place.ended_page(room, ended, here=False)


@bp.get("/rooms/<room>/leave")
def leave_form(room: str) -> ResponseReturnValue:
    """Asks once: "leave the line?" (or the room). A waiting place checks in meanwhile."""
    token = session.ticket(room)
    found = visits().place(room, token) if token is not None else None
    if token is None or found is None or found.ended is not None:
        return place.to_gate(room)
    seat = found.state in ("turn", "seated")
    return place.no_store(render_template("leave.html", room=room, seat=seat, found=found))


@bp.post("/rooms/<room>/leave")
def leave(room: str) -> ResponseReturnValue:
    """Gives the place or seat up; the room's page then says "you left"."""
    token = session.ticket(room)
    if token is not None:
        seat = reports().ticket_state(room, token) in place.SEATED
        session.mark_ended(room, token, "left", seat)
        with contextlib.suppress(TicketNotFound, RoomNotFound):
            visits().end(room, token)
    return place.to_gate(room)


@bp.get("/rooms/<room>/email")
def email_form(room: str) -> ResponseReturnValue:
    """The email form on a page of its own, for a browser without JavaScript: the
    waiting page reloads itself, and would wipe what is typed."""
    token = session.ticket(room)
    found = visits().place(room, token) if token is not None else None
    if token is None or found is None or found.standing is None:
        return place.to_gate(room)
    seconds = reports().settings(room).dropout_seconds
    told = session.email(room)
    context = {"room": room, "you": public_id(token), "seconds": seconds, "told": told}
    return place.no_store(render_template("email.html", **context))


@bp.post("/rooms/<room>/email")
def email(room: str) -> ResponseReturnValue:
    """Sets (or, with ``remove``, drops) the email the engine tells when a seat is
    offered to this visitor's place, then back to the room's page."""
    token, back = session.ticket(room), place.to_gate(room)
    if token is None:
        return back
    address = ""
    if "remove" not in request.form:
        try:
            address = normalise_email(request.form.get("email", "")[:MAX_EMAIL]).address
        except InvalidInput as error:
            flash(explain(error), "error")
            return back
    if not visits().set_email(room, token, address, current_language()):
        flash(_("Your place is no longer waiting, so nothing was changed."), "error")
        return back
    session.set_email(room, address)
    if address:
        flash(_("We will email %(email)s when it is your turn.", email=address), "info")
    else:
        flash(_("No email will be sent."), "info")
    return back
