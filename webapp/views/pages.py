"""The browser pages: the lobby, the gate of a room, the waiting page and the room page.

The signed session holds the visitor: a display name, a random visitor id (the engine
identity is ``visitor:<id>``, so joining twice gives the same place) and the ticket
token of each room. The waiting page polls ``/rooms/<room>/line``: that poll is the
check-in, and its answer sets the delay of the next one.
"""

from __future__ import annotations

import contextlib
import math
import re
import secrets
from typing import Any

from flask import (
    Blueprint,
    flash,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_babel import format_timedelta

from webapp.domain.estimate import Estimate
from webapp.domain.lobby import Standing
from webapp.domain.rooms import (
    InvalidInput,
    RoomError,
    RoomNotFound,
    TicketGone,
    TicketNotFound,
    clean_display_name,
    public_id,
)
from webapp.i18n import _, gone_reason, ngettext
from webapp.realtime import room_state
from webapp.views import lobby, rooms, visits
from webapp.views.errors import explain

bp = Blueprint("pages", __name__)
NEXT_PATH = re.compile(r"/rooms/[a-z0-9-]{1,64}")


def visitor_id() -> str:
    if "vid" not in session:
        session["vid"] = secrets.token_urlsafe(12)
    return str(session["vid"])


def tickets() -> dict[str, str]:
    held: dict[str, str] = session.get("tickets", {})
    return held


def remember(room: str, token: str | None) -> None:
    held = dict(tickets())
    if token is None:
        held.pop(room, None)
        session["shown"] = {r: v for r, v in session.get("shown", {}).items() if r != room}
    else:
        held[room] = token
    session["tickets"] = held


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


@bp.get("/")
def home() -> ResponseReturnValue:
    mine: dict[str, Any] = {}
    for room, token in list(tickets().items()):
        # A seat is only looked at: a check-in would hold it for session_seconds while
        # its holder browses the lobby, instead of the grace an away visitor gets.
        if rooms().ticket_state(room, token) in ("offered", "admitted"):
            mine[room] = "seated"
            continue
        try:
            mine[room] = lobby().check_in(room, token).ticket.position
        except RoomError:
            remember(room, None)
    wanted = request.args.get("next", "")
    return render_template(
        "lobby.html",
        rooms=rooms().summaries(),
        mine=mine,
        name=session.get("name", ""),
        next=wanted if NEXT_PATH.fullmatch(wanted) else "",
    )


@bp.post("/name")
def set_name() -> ResponseReturnValue:
    wanted = request.form.get("next", "")
    try:
        name = clean_display_name(request.form.get("name", ""))
    except InvalidInput as error:
        name, problem = "", explain(error)
    else:
        problem = "" if name else _("Please type a name that others will see.")
    if problem:
        flash(problem, "error")
        return redirect(url_for(".home", next=wanted or None)), 303
    session["name"] = name
    visitor_id()
    return redirect(wanted if NEXT_PATH.fullmatch(wanted) else url_for(".home")), 303


@bp.get("/rooms/<room>")
def gate(room: str) -> ResponseReturnValue:
    if is_waitlist(room):
        from webapp.views.waitlist import signup_page  # it imports this module

        return signup_page(room)
    if not session.get("name"):
        return redirect(url_for(".home", next=request.path))
    standing = visits().join(room, identity=f"visitor:{visitor_id()}", name=session["name"])
    remember(room, standing.ticket.token)
    if not standing.ticket.seated:
        return render_template("waiting.html", **line_context(room, standing))
    poll = standing.poll_after
    welcome = session.pop("welcome", None) == room
    state = room_state(rooms(), room)
    you = public_id(standing.ticket.token)
    code = standing.ticket.support_code
    return render_template(
        "room.html", room=room, state=state, welcome=welcome, poll=poll, you=you, support_code=code
    )


def is_waitlist(room: str) -> bool:
    """From the cached settings (``Lobby``): no extra Redis call on a live room's gate."""
    try:
        return lobby().settings(room).kind == "waitlist"
    except RoomNotFound:
        return False


@bp.get("/rooms/<room>/line")
def line(room: str) -> ResponseReturnValue:
    token = tickets().get(room)
    if token is None:
        return to_gate(room)
    try:
        standing = lobby().check_in(room, token, shown=session.get("shown", {}).get(room))
    except (TicketGone, TicketNotFound, RoomNotFound) as error:
        remember(room, None)
        page = "_line_status.html" if is_htmx() else "waiting.html"
        status = 200 if is_htmx() else 404 if isinstance(error, RoomNotFound) else 410
        return render_template(page, room=room, ended=ended_words(error)), status
    if standing.ticket.seated:
        session["welcome"] = room
        return to_gate(room)
    page = "_line_status.html" if is_htmx() else "waiting.html"
    return render_template(page, **line_context(room, standing))


@bp.post("/rooms/<room>/leave")
def leave(room: str) -> ResponseReturnValue:
    token = tickets().get(room)
    remember(room, None)
    if token is not None:
        with contextlib.suppress(TicketNotFound, RoomNotFound):
            visits().end(room, token)
    flash(_("You left %(room)s. Your place has been given up.", room=room), "info")
    return redirect(url_for(".home")), 303


def remember_shown(room: str, standing: Standing) -> None:
    """Keeps the wait figure this page shows, so the next poll (on any worker) moves
    smoothly from it (``estimate.smooth``); the signed session carries it."""
    shown = dict(session.get("shown", {}))
    if standing.shown is None:
        shown.pop(room, None)
    else:
        shown[room] = standing.shown.dumps()
    session["shown"] = shown


def to_gate(room: str) -> ResponseReturnValue:
    """Into the room: a full navigation, also when htmx asked."""
    url = url_for(".gate", room=room)
    if is_htmx():
        response = make_response("", 200)
        response.headers["HX-Redirect"] = url
        return response
    return redirect(url), 303


def line_context(room: str, standing: Standing) -> dict[str, Any]:
    ticket = standing.ticket
    remember_shown(room, standing)
    seen = request.args.get("seen", type=int)
    return {
        "room": room,
        "ticket": ticket,
        "wait": wait_words(standing.estimate, ticket.room_status),
        "trend": trend_words(standing.trend),
        "poll": standing.poll_after,
        "moved": seen is not None and seen != ticket.position,
    }


def trend_words(trend: str | None) -> str | None:
    """Why the estimate moved, when the line's pace did: a growing figure reads as news,
    not as a broken clock."""
    if trend == "slower":
        return _("The line has slowed down, so the wait is longer than we said before.")
    if trend == "faster":
        return _("The line has sped up.")
    return None


def wait_words(guess: Estimate | None, room_status: str) -> str:
    """The estimated wait as a range in plain words: "about 3 to 5 minutes"."""
    if room_status == "paused":
        return _("The room is paused, so nobody is let in right now. Keep this page open.")
    if guess is None:
        return _("We are still measuring how fast this line moves.")
    low, high = max(guess.wait - guess.spread, 0.0), guess.wait + guess.spread
    if high < 60:
        return _("less than a minute")
    if high < 120:
        return _("about a minute or two")
    if high < 3600:
        low_m, high_m = max(math.floor(low / 60), 1), math.ceil(high / 60)
        if high_m > low_m:
            return ngettext(
                "about %(low)s to %(num)s minute", "about %(low)s to %(num)s minutes", high_m,
                low=low_m,
            )  # fmt: skip
        return _("about %(duration)s", duration=duration(low_m * 60))
    low_h, high_h = max(math.floor(low / 3600), 1), math.ceil(high / 3600)
    if high_h > low_h:
        return ngettext(
            "about %(low)s to %(num)s hour", "about %(low)s to %(num)s hours", high_h, low=low_h
        )
    return _("about %(duration)s", duration=duration(low_h * 3600))


def duration(seconds: int) -> str:
    """ "5 minutes", "5 Minuten", "5 minutos": Babel, in the visitor's language."""
    return str(format_timedelta(seconds, threshold=1))


def ended_words(error: RoomError) -> str:
    """Why a place ended, as a sentence in the visitor's language."""
    if isinstance(error, TicketGone):
        reason = gone_reason(error.why)
        return reason[:1].upper() + reason[1:] + "."
    return explain(error)
