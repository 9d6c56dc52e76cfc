"""The browser pages: the lobby, the visitor's name, and a room's own page.

A room's page (``GET /rooms/<room>``) never joins: it shows the visitor's live place
(the waiting page or the room), the ended state of the place this browser had there,
or a card with one button that joins (``POST /rooms/<room>/join``). So Back, a reload,
a restored tab or a link preview can never put anyone in line; only the visitor can.
The waiting page's poll, leaving and the email are ``webapp.views.visitor.line``.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from flask import Blueprint, flash, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.wrappers import Response

from webapp.domain.admission import Joined, JoinRequest, Outcome, PuzzleRequired
from webapp.domain.identity import MAX_IDENTITY_TOKEN, IdentityInvalid, IdentityRequired
from webapp.domain.refusals import NotOpenYet, RoomClosed, SoldOut, TicketGone, TicketNotFound
from webapp.domain.rooms import InvalidInput, RoomError, RoomNotFound, clean_display_name
from webapp.domain.settings import RoomSettings
from webapp.domain.visits import Place
from webapp.views import admission, reports, visits
from webapp.views.shared import own_page, passes, place, puzzle, session
from webapp.views.shared.errors import asks_for_json
from webapp.views.shared.standing import standing_json, waitlist_entry, waitlist_json
from webapp.views.shared.words import explain
from webapp.views.visitor.waitlist import signup_page
from webapp.web.i18n import _
from webapp.web.replies import join_refusal

bp = Blueprint("pages", __name__)
bp.after_request(own_page.room_headers)  # a site room's form-action; a room's own page


@bp.after_request
def vary_by_accept(response: Response) -> Response:
    """A room's page answers HTML or JSON by the request's Accept (its JSON mode)."""
    if request.endpoint == "pages.room_page":
        response.vary.add("Accept")
    return response


NEXT_PATH = re.compile(r"/rooms/[a-z0-9-]{1,64}")


@bp.get("/")
def home() -> ResponseReturnValue:
    if place.is_htmx():  # the room cards' own poll, which runs while no place is live
        if not session.tickets():
            return render_template("_room_cards.html", cards=reports().cards(), mine={})
        # a place began in another tab: from now on the places' poll updates the lobby
        return lobby_update(oob_places=True)
    wanted = request.args.get("next", "")
    return render_template(
        "lobby.html",
        **lobby_parts(),
        name=session.name(),
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
        "cards": reports().cards(),
        "mine": marks(found),
        "places": found,
        "places_poll": places_poll(found),
        "seats": {room: mark.seat for room, mark in session.ended_marks().items()},
    }


def marks(places: list[Place]) -> dict[str, Any]:
    """What each room's card says of the visitor: seated, or their place in line."""
    mine: dict[str, Any] = {}
    for found in places:
        if found.state in ("turn", "seated"):
            mine[found.room] = "seated"
        elif found.standing is not None:  # position 0: a drop's pre-queue, no place yet
            mine[found.room] = found.standing.ticket.position or "prequeue"
    return mine


def my_places() -> list[Place]:
    """Every place of this session: live ones checked in, ended ones with their reason."""
    found = []
    for room, token in sorted(session.tickets().items()):
        if session.gave_away(room, token):  # now another browser's: listed as ended, moved
            continue
        live = visits().place(room, token)
        if live.ended is not None:
            place.mark(room, token, live.ended.why)
        found.append(live)
    rooms_live = {p.room for p in found}
    for room, mark in sorted(session.ended_marks().items()):
        if room not in rooms_live:
            found.append(Place(room, "ended", ended=reports().ended(room, mark.why)))
    return found


def places_poll(found: list[Place]) -> float | None:
    """The lobby polls as often as its most pressing place needs (a waiting place's
    poll_after leaves a margin before its check-in window ends); not at all without a
    live place."""
    polls = [p.standing.poll_after for p in found if p.standing is not None]
    polls += [min(max(p.left or 0.0, 1.0), 5.0) for p in found if p.state == "turn"]
    return min(polls) if polls else None


@bp.post("/places/<room>/dismiss")
def dismiss(room: str) -> ResponseReturnValue:
    """Forgets an ended place the lobby keeps showing."""
    session.dismiss(room)
    return redirect(url_for(".home")), 303


def typed_name() -> tuple[str, str]:
    """The display name in the form, cleaned, and what is wrong with it ('' if nothing)."""
    try:
        name = clean_display_name(request.form.get("name", ""))
    except InvalidInput as error:
        return "", explain(error)
    return name, "" if name else _("Please type a name that others will see.")


@bp.post("/name")
def set_name() -> ResponseReturnValue:
    """Sets the display name, or changes it (the header's form, from any page): the
    visitor's live tickets carry the new one, so rooms show it from their next update."""
    wanted = request.form.get("next", "")
    back = wanted if NEXT_PATH.fullmatch(wanted) else ""
    name, problem = typed_name()
    if problem:
        flash(problem.capitalize().rstrip(".") + ".", "error")
        if session.name():  # a change: back where it was asked, the old name kept
            return redirect(request.script_root + back if back else url_for(".home")), 303
        return redirect(url_for(".home", next=back or None)), 303
    changed = session.name() not in ("", name)
    session.set_name(name)
    if changed:
        for room, token in session.tickets().items():
            with contextlib.suppress(RoomError):
                visits().rename(room, token, name)
        flash(_("Your name is now %(name)s.", name=name), "info")
    return redirect(request.script_root + back if back else url_for(".home")), 303


@bp.get("/rooms/<room>")
def room_page(room: str) -> ResponseReturnValue:
    """A room's page. ``t``: the public id of the ticket the page showed (the room
    page's own reload): if that one ended, the page says so and why. Asked for JSON
    (``Accept: application/json``), the visitor's standing as the position API answers
    it (``mine_as_json``)."""
    if asks_for_json():
        return mine_as_json(room)
    if is_waitlist(room):
        return signup_page(room)
    passes.keep_next(room)  # a site room's gate sent the visitor: where to go once in
    if "identity" in request.args:  # the site vouches for its customer (issue 29)
        session.keep_customer(room, request.args["identity"][:MAX_IDENTITY_TOKEN])
    token, ended = session.page_ticket(room, request.args.get("t"))
    if token is not None:
        return place.show(room, token)
    if ended is not None:
        return place.ended_page(room, ended, here="t" not in request.args)
    if (
        "next" in request.args
        and reports().settings(room).site_url
        and passes.asked_by_a_visitor(("document",))  # not the site's favicon, redirected
    ):
        return join_from_the_gate(room)
    return place.join_card(room)


def join_from_the_gate(room: str) -> ResponseReturnValue:
    """A site room's gate sent a visitor without a place (issue 30): in line at once,
    no button (a room that asks for a puzzle has the page solve it, then join). What
    bars a join shows the room's card, which says why."""
    try:
        outcome = take_place(room)
    except (IdentityRequired, RoomClosed, SoldOut):
        return place.join_card(room)
    if isinstance(outcome, PuzzleRequired):
        return place.join_card(room, join_now=True)
    token = session.ticket(room)
    return place.show(room, token) if token is not None else place.join_card(room)


@bp.post("/rooms/<room>/join")
def join(room: str) -> ResponseReturnValue:
    """The one way into a room's line (the join card, the lobby, "Join again"): joins,
    or finds this browser's live place, then shows it on the room's page."""
    if is_waitlist(room):
        return redirect(url_for(".room_page", room=room)), 303
    if "name" in request.form:  # the card asked a visitor without a name for one
        name, problem = typed_name()
        if problem:
            return place.join_card(room, 400, problem)
        session.set_name(name)
    elif not session.name() and not reports().settings(room).site_url:  # a site: no chat
        return redirect(url_for(".room_page", room=room)), 303
    if isinstance(take_place(room), PuzzleRequired):  # the room asks for a proof of work
        return place.join_card(room, 403, puzzle.words())
    return redirect(url_for(".room_page", room=room)), 303


def take_place(room: str) -> Outcome:
    """This browser's join (``Admission``), its place remembered; the site's token for
    its customer used up unless the join must come again with a puzzle solved."""
    try:
        outcome = admission().join(joining(room))
    except IdentityInvalid:
        session.keep_customer(room, None)  # a bad token stays bad
        raise
    if not isinstance(outcome, PuzzleRequired):
        session.keep_customer(room, None)  # used (or not needed: a place held)
    if isinstance(outcome, Joined) and session.gave_away(room, outcome.standing.ticket.token):
        outcome = admission().join(joining(room))  # that place is another browser's now
    if isinstance(outcome, Joined):
        session.remember(room, outcome.standing.ticket.token, outcome.standing.ticket.position)
    return outcome


def mine_as_json(room: str) -> ResponseReturnValue:
    """JSON mode (issue 30, as Cloudflare's): this browser's place in ``room`` as the
    position API answers it (a check-in); 404 without one, 410 with why it ended."""
    if is_waitlist(room):
        entry = session.entries().get(room)
        if entry is None:
            raise TicketNotFound("this browser has no entry on this waitlist")
        return waitlist_json(room, waitlist_entry(room, entry))
    token, ended = session.page_ticket(room, None)
    if token is None or session.gave_away(room, token):
        if ended is not None:
            raise TicketGone(ended.why)
        reports().settings(room)  # RoomNotFound for a room that is not there
        raise TicketNotFound("this browser holds no place in this room")
    return standing_json(visits().check_in(room, token), room)


def joining(room: str) -> JoinRequest:
    """This browser's join: its visitor id, its name, the place it holds here (moved or
    claimed: one its visitor id does not find), the puzzle's solution it sent."""
    held = session.ticket(room)
    if held is not None and (session.holder(room) is None or session.gave_away(room, held)):
        held = None  # its own place: its visitor id finds it
    return JoinRequest(
        room,
        address=request.remote_addr or "",
        identity=session.identity(),
        held=held,
        name=session.name(),
        solution=request.form.get("altcha", ""),
        customer=session.customer(room),
    )


def is_waitlist(room: str) -> bool:
    """From the cached settings (``Lobby``): no extra Redis call on a live room's page."""
    try:
        return reports().settings(room).kind == "waitlist"
    except RoomNotFound:
        return False


# A drop's refusals of a join, for the API and the room's page alike (issue 24)
@bp.app_errorhandler(NotOpenYet)
def not_open_yet(error: NotOpenYet) -> ResponseReturnValue:
    """A join before the pre-queue opens: 409 with the times; a page counts down."""
    room = (request.view_args or {}).get("room", "")
    try:
        settings = reports().settings(room)
    except RoomNotFound:
        settings = RoomSettings()
    if request.path.startswith("/api/"):
        status, body, _ = join_refusal(error, settings)
        return jsonify(body), status
    return place.join_card(room, 409)


@bp.app_errorhandler(SoldOut)
def sold_out(error: SoldOut) -> ResponseReturnValue:
    """A join once the stock is gone: 410 ``sold_out``; the room's page says so."""
    if request.path.startswith("/api/"):
        status, body, _ = join_refusal(error, RoomSettings())
        return jsonify(body), status
    return place.join_card((request.view_args or {}).get("room", ""), 410)
