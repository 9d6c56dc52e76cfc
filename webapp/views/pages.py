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
from webapp.realtime import room_state
from webapp.views import lobby, moves, rooms, visits

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
        if moves().moved_away(room, token, session.get("holders", {}).get(room)):
            remember(room, None)  # moved to another browser: not this one's any more
            continue
        # A seat is only looked at: a check-in would hold it for session_seconds while
        # its holder browses the lobby, instead of the grace an away visitor gets.
        if rooms().ticket_state(room, token) in ("offered", "admitted"):
            mine[room] = "seated"
            continue
        try:
            mine[room] = lobby().check_in(room, token).ticket.position
        except RoomError:
            remember(room, None)
    if is_htmx():  # the lobby's poll: the room cards alone
        return render_template("_room_cards.html", cards=lobby().cards(), mine=mine)
    wanted = request.args.get("next", "")
    return render_template(
        "lobby.html",
        cards=lobby().cards(),
        mine=mine,
        name=session.get("name", ""),
        next=wanted if NEXT_PATH.fullmatch(wanted) else "",
    )


@bp.post("/name")
def set_name() -> ResponseReturnValue:
    """Sets the display name, or changes it (the header's form, from any page): the
    visitor's live tickets carry the new one, so rooms show it from their next update."""
    wanted = request.form.get("next", "")
    back = wanted if NEXT_PATH.fullmatch(wanted) else ""
    try:
        name = clean_display_name(request.form.get("name", ""))
    except InvalidInput as error:
        name, problem = "", str(error)
    else:
        problem = "" if name else "Please type a name that others will see."
    if problem:
        flash(problem.capitalize().rstrip(".") + ".", "error")
        if session.get("name"):  # a change: back where it was asked, the old name kept
            return redirect(back or url_for(".home")), 303
        return redirect(url_for(".home", next=back or None)), 303
    changed = session.get("name") not in (None, "", name)
    session["name"] = name
    visitor_id()
    if changed:
        for room, token in tickets().items():
            with contextlib.suppress(RoomError):
                visits().rename(room, token, name)
        flash(f"Your name is now {name}.", "info")
    return redirect(back or url_for(".home")), 303


@bp.get("/rooms/<room>")
def gate(room: str) -> ResponseReturnValue:
    if is_waitlist(room):
        from webapp.views.waitlist import signup_page  # it imports this module

        return signup_page(room)
    if not session.get("name"):
        return redirect(url_for(".home", next=request.path))
    standing = visits().join(room, identity=f"visitor:{visitor_id()}", name=session["name"])
    if (gone := moved_away(room, standing.ticket.token)) is not None:
        return gone
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


def moved_away(room: str, token: str) -> ResponseReturnValue | None:
    from webapp.views import move  # it imports this module

    return move.moved_away(room, token)


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
    if (gone := moved_away(room, token)) is not None:
        return gone
    try:
        standing = lobby().check_in(room, token, shown=session.get("shown", {}).get(room))
    except (TicketGone, TicketNotFound, RoomNotFound) as error:
        remember(room, None)
        page = "_line_status.html" if is_htmx() else "waiting.html"
        status = 200 if is_htmx() else 404 if isinstance(error, RoomNotFound) else 410
        return render_template(page, room=room, ended=str(error)), status
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
    flash(f"You left {room}. Your place has been given up.", "info")
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
        return "The line has slowed down, so the wait is longer than we said before."
    if trend == "faster":
        return "The line has sped up."
    return None


def wait_words(guess: Estimate | None, room_status: str) -> str:
    """The estimated wait as a range in plain words: "about 3 to 5 minutes"."""
    if room_status == "paused":
        return "The room is paused, so nobody is let in right now. Keep this page open."
    if guess is None:
        return "We are still measuring how fast this line moves."
    low, high = max(guess.wait - guess.spread, 0.0), guess.wait + guess.spread
    if high < 60:
        return "less than a minute"
    if high < 120:
        return "about a minute or two"
    if high < 3600:
        low_m, high_m = max(math.floor(low / 60), 1), math.ceil(high / 60)
        return f"about {low_m} to {high_m} minutes" if high_m > low_m else f"about {low_m} minutes"
    low_h, high_h = max(math.floor(low / 3600), 1), math.ceil(high / 3600)
    return f"about {low_h} to {high_h} hours" if high_h > low_h else f"about {low_h} hours"
