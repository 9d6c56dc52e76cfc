"""The browser pages: the lobby, the gate of a room, the waiting page and the room page.

The signed session holds the visitor: a display name, a random visitor id (the engine
identity is ``visitor:<id>``, so joining twice gives the same place) and the ticket
token of each room. The waiting page polls ``/rooms/<room>/line``: that poll is the
check-in, and its answer sets the delay of the next one.
"""

from __future__ import annotations

import contextlib
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

from webapp.domain.emails import normalise_email
from webapp.domain.lobby import Place, Standing
from webapp.domain.rooms import (
    InvalidInput,
    RoomError,
    RoomNotFound,
    TicketNotFound,
    clean_display_name,
    public_id,
)
from webapp.i18n import _, current_language
from webapp.realtime import room_state
from webapp.views import lobby, reports, rooms, visits
from webapp.views.api import MAX_EMAIL
from webapp.views.words import explain, trend_words, wait_words

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
    if is_htmx():  # the room cards' own poll, which runs while no place is live
        if not tickets():
            return render_template("_room_cards.html", cards=lobby().cards(), mine={})
        # a place began in another tab: from now on the places' poll updates the lobby
        return lobby_update(oob_places=True)
    wanted = request.args.get("next", "")
    return render_template(
        "lobby.html",
        **lobby_parts(),
        name=session.get("name", ""),
        next=wanted if NEXT_PATH.fullmatch(wanted) else "",
    )


@bp.get("/places")
def places() -> ResponseReturnValue:
    """The lobby's poll while the visitor has a live place: checks in for every place
    of the session (so a visitor on the lobby keeps them), shows each one's state (ended
    ones with why), and brings the room cards along: one poll, one check-in per place."""
    return lobby_update()


def lobby_update(oob_places: bool = False) -> str:
    return render_template("_lobby_update.html", **lobby_parts(), oob_places=oob_places)


def lobby_parts() -> dict[str, Any]:
    """The lobby's live parts (its page and its updates): the room cards with what
    each says of the visitor, and the visitor's places (checked in) with their poll."""
    found = my_places()
    return {
        "cards": lobby().cards(),
        "mine": marks(found),
        "places": found,
        "places_poll": places_poll(found),
    }


def marks(places: list[Place]) -> dict[str, Any]:
    """What each room's card says of the visitor: seated, or their place in line."""
    mine: dict[str, Any] = {}
    for place in places:
        if place.state in ("turn", "seated"):
            mine[place.room] = "seated"
        elif place.standing is not None:
            mine[place.room] = place.standing.ticket.position
    return mine


@bp.post("/places/<room>/dismiss")
def dismiss(room: str) -> ResponseReturnValue:
    """Forgets an ended place the lobby keeps showing."""
    session["ended"] = {r: e for r, e in session.get("ended", {}).items() if r != room}
    return redirect(url_for(".home")), 303


def my_places() -> list[Place]:
    """Every place of this session: live ones checked in, ended ones with their reason."""
    found = []
    for room, token in sorted(tickets().items()):
        if gave_away(room, token):  # now another browser's: listed below as ended, moved
            continue
        place = lobby().place(room, token)
        if place.ended is not None:
            forget_ended(room, token, place.ended.why)
        found.append(place)
    live = {p.room for p in found}
    for room, (_token, why) in sorted(session.get("ended", {}).items()):
        if room not in live:
            found.append(Place(room, "ended", ended=lobby().ended(room, why)))
    return found


def places_poll(found: list[Place]) -> float | None:
    """The lobby polls as often as its most pressing place needs (a waiting place's
    poll_after is at most half its dropout_seconds); not at all without a live place."""
    polls = [p.standing.poll_after for p in found if p.standing is not None]
    polls += [min(max(p.left or 0.0, 1.0), 5.0) for p in found if p.state == "turn"]
    return min(polls) if polls else None


def forget_ended(room: str, token: str, why: str) -> None:
    """The ticket ended: the session forgets it but remembers why (for its other pages,
    which poll with this ticket's public id and are told, never joined again)."""
    remember(room, None)
    ended = dict(session.get("ended", {}))
    ended[room] = [public_id(token), why]
    session["ended"] = ended


def page_ticket(room: str) -> tuple[str | None, str | None]:
    """The session's ticket for the room if it is the one this page was showing (``t``,
    its public id), and else None with why this page's ticket is no longer live."""
    token, mine = tickets().get(room), request.args.get("t")
    if token is not None and (not mine or public_id(token) == mine):
        return token, None
    ended_id, why = session.get("ended", {}).get(room, ["", "unknown"])
    if token is not None:  # a newer place than this page's, in another tab
        return None, why if ended_id == mine else "replaced"
    return None, why if not mine or ended_id == mine else "unknown"


@bp.post("/name")
def set_name() -> ResponseReturnValue:
    """Sets the display name, or changes it (the header's form, from any page): the
    visitor's live tickets carry the new one, so rooms show it from their next update."""
    wanted = request.form.get("next", "")
    back = wanted if NEXT_PATH.fullmatch(wanted) else ""
    try:
        name = clean_display_name(request.form.get("name", ""))
    except InvalidInput as error:
        name, problem = "", explain(error)
    else:
        problem = "" if name else _("Please type a name that others will see.")
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
        flash(_("Your name is now %(name)s.", name=name), "info")
    return redirect(back or url_for(".home")), 303


@bp.get("/rooms/<room>")
def gate(room: str) -> ResponseReturnValue:
    if is_waitlist(room):
        from webapp.views.waitlist import signup_page  # it imports this module

        return signup_page(room)
    if not session.get("name"):
        return redirect(url_for(".home", next=request.path))
    if "t" in request.args:  # the room page's own reload: this seat, or say it ended
        token, why = page_ticket(room)
        place = lobby().place(room, token) if token else None
        if place is None or place.ended is not None:
            if token is not None and place is not None and place.ended is not None:
                why = place.ended.why
                forget_ended(room, token, why)
            return ended_page(room, why or "unknown", seat=True)
    standing = visits().join(room, identity=f"visitor:{visitor_id()}", name=session["name"])
    if (gone := moved_away(room, standing.ticket.token)) is not None:
        return gone
    joined(room, standing)
    if not standing.ticket.seated:
        return render_template("waiting.html", **line_context(room, standing))
    poll = standing.poll_after
    welcome = session.pop("welcome", None) == room
    state = room_state(reports(), room)
    you = public_id(standing.ticket.token)
    code = standing.ticket.support_code
    return render_template(
        "room.html", room=room, state=state, welcome=welcome, poll=poll, you=you, support_code=code
    )


def joined(room: str, standing: Standing) -> None:
    """A join (or a rejoin of the live place): the session keeps the ticket and the
    position it joined at (the progress bar's start); an old ended place is forgotten."""
    token = standing.ticket.token
    if tickets().get(room) != token:
        start = dict(session.get("start", {}))
        start[room] = standing.ticket.position
        session["start"] = start
    remember(room, token)
    if room in session.get("ended", {}):
        session["ended"] = {r: e for r, e in session["ended"].items() if r != room}


def moved_away(room: str, token: str) -> ResponseReturnValue | None:
    from webapp.views import move  # it imports this module

    return move.moved_away(room, token)


def gave_away(room: str, token: str) -> bool:
    from webapp.views import move  # it imports this module

    return move.gave_away(room, token)


def is_waitlist(room: str) -> bool:
    """From the cached settings (``Lobby``): no extra Redis call on a live room's gate."""
    try:
        return lobby().settings(room).kind == "waitlist"
    except RoomNotFound:
        return False


@bp.get("/rooms/<room>/line")
def line(room: str) -> ResponseReturnValue:
    """The waiting page's poll (the check-in). It never joins: the page's own ticket
    (``t``, its public id) decides, so a page whose place ended says so and why."""
    token, why = page_ticket(room)
    if token is None:
        if why == "unknown" and "t" not in request.args:
            return to_gate(room)  # an old bookmark of the waiting page: the gate asks
        return ended_page(room, why or "unknown")
    if (gone := moved_away(room, token)) is not None:
        return gone
    place = lobby().place(room, token, shown=session.get("shown", {}).get(room))
    if place.ended is not None:
        forget_ended(room, token, place.ended.why)
        return ended_page(room, place.ended.why)
    page = "_line_status.html" if is_htmx() else "waiting.html"
    if place.standing is None:  # a seat is offered or held: it is this visitor's turn
        session["welcome"] = room
        context = {"room": room, "turn": place, "you": public_id(token), "poll": 5.0}
        return render_template(page, **context)
    return render_template(page, **line_context(room, place.standing))


def ended_page(room: str, why: str, seat: bool = False) -> ResponseReturnValue:
    """The ended state: the partial alone for htmx (200, so it is swapped in and stops
    the polling), else the whole page with 410 (404 when the room is gone)."""
    ended = lobby().ended(room, why)
    seat = seat or request.args.get("seat") == "1"  # the room page asks for its seat
    context = {"room": room, "ended": ended, "seat": seat}
    if is_htmx():
        return render_template("_line_status.html", **context), 200
    return render_template("waiting.html", **context), 404 if not ended.exists else 410


@bp.post("/rooms/<room>/leave")
def leave(room: str) -> ResponseReturnValue:
    token = tickets().get(room)
    if token is not None:
        forget_ended(room, token, "left")
        with contextlib.suppress(TicketNotFound, RoomNotFound):
            visits().end(room, token)
    flash(_("You left %(room)s. Your place has been given up.", room=room), "info")
    return redirect(url_for(".home")), 303


@bp.post("/rooms/<room>/email")
def email(room: str) -> ResponseReturnValue:
    """The waiting page's "email me when it is my turn": sets (or, with ``remove``, drops)
    the email the engine tells when a seat is offered to this visitor's place."""
    token = tickets().get(room)
    back = redirect(url_for(".line", room=room, t=public_id(token) if token else None)), 303
    if token is None:
        return back
    emails = dict(session.get("emails", {}))
    address = ""
    if "remove" not in request.form:
        try:
            address = normalise_email(request.form.get("email", "")[:MAX_EMAIL]).address
        except InvalidInput as error:
            flash(explain(error), "error")
            return back
    if not rooms().set_email(room, token, address, current_language()):
        flash(_("Your place is no longer waiting, so nothing was changed."), "error")
        return back
    if address:
        emails[room] = address
        flash(_("We will email %(email)s when it is your turn.", email=address), "info")
    else:
        emails.pop(room, None)
        flash(_("No email will be sent."), "info")
    session["emails"] = emails
    return back


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
    start = max(session.get("start", {}).get(room, ticket.position), ticket.position)
    guess = standing.estimate
    return {
        "room": room,
        "ticket": ticket,
        "you": public_id(ticket.token),
        "wait": None if guess is None else wait_words(guess),
        "seconds": None if guess is None else round(guess.wait),
        "basis": standing.basis,
        "trend": trend_words(standing.trend),
        "poll": standing.poll_after,
        "moved": seen is not None and seen != ticket.position,
        "start": start,
    }
