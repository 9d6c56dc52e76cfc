"""The JSON API (documented in docs/api.md)."""

from __future__ import annotations

import secrets
from functools import cache
from importlib import resources
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from flask.typing import ResponseReturnValue

from webapp.domain.admission import Joined, JoinRequest, PuzzleRequired, SignedUp, api_identity
from webapp.domain.challenge import MAX_PAYLOAD
from webapp.domain.emails import MAX_EMAIL
from webapp.domain.identity import MAX_IDENTITY_TOKEN
from webapp.domain.rooms import InvalidInput, RoomNotFound, TicketNotFound, clean_display_name
from webapp.domain.waitlist import KnownAddress
from webapp.views import admission, reports, visits
from webapp.views.shared.drops import draw_json, room_status
from webapp.views.shared.json_body import json_object
from webapp.views.shared.standing import standing_json, waitlist_entry, waitlist_json
from webapp.web.links import entry_language

bp = Blueprint("api", __name__, url_prefix="/api")
MAX_REF = 32  # characters of a referral code that are looked at


def text_field(body: dict[str, Any], name: str, most: int) -> str:
    value = body.get(name, "")
    if not isinstance(value, str) or len(value) > most:
        raise InvalidInput(f"{name} must be text of at most {most} characters")
    return value


@bp.get("/rooms")
def list_rooms() -> ResponseReturnValue:
    return jsonify(
        [
            {**s._asdict(), "notice": s.notice or None, "status": room_status(s.name, s.status)}
            for s in reports().summaries()
        ]
    )


@bp.post("/rooms/<room>/join")
def join(room: str) -> ResponseReturnValue:
    """A join of any room (``Admission`` decides it); the reply is the place, the
    waitlist entry, or why not."""
    body = json_object(required=False)
    joining = JoinRequest(
        room,
        address=request.remote_addr or "",
        identity=api_identity(request.headers.get("Idempotency-Key", "")),
        name=clean_display_name(body.get("name")),
        email=text_field(body, "email", MAX_EMAIL),
        lang=entry_language(),
        ref=text_field(body, "ref", MAX_REF),
        # an API client has no device that lasts: each sign-up is its own, so an address
        # signed up already never answers with its entry here
        device=secrets.token_urlsafe(12),
        solution=text_field(body, "altcha", MAX_PAYLOAD),  # a bad one: 400, asked or not
        customer=text_field(body, "identity", MAX_IDENTITY_TOKEN) or None,
    )
    try:
        outcome = admission().join(joining)
    except KnownAddress as known:  # signed up before: its token goes to the mailbox
        return jsonify(token=None, status="known", message=str(known)), 202
    if isinstance(outcome, PuzzleRequired):
        return jsonify(error="challenge_required", challenge=outcome.challenge), 403
    if isinstance(outcome, SignedUp):
        return waitlist_json(room, outcome.entry)
    if isinstance(outcome, Joined):
        return standing_json(outcome.standing, room)
    raise TicketNotFound("no such ticket")  # Rejoined needs a held ticket: never here


@bp.get("/rooms/<room>/challenge")
def challenge(room: str) -> ResponseReturnValue:
    """A proof of work to solve before joining (ALTCHA): valid 5 minutes, this room only."""
    return jsonify(admission().challenge(room)), 200, {"Cache-Control": "no-store"}


@bp.get("/rooms/<room>/position/<token>")
def position(room: str, token: str) -> ResponseReturnValue:
    # `shown`: the figure this client showed last (the previous reply's "shown"), so
    # the new one moves smoothly from it; optional, and anything unparsable is ignored.
    shown = request.args.get("shown")
    if reports().settings(room).kind == "waitlist":
        return waitlist_json(room, waitlist_entry(room, token))
    return standing_json(visits().check_in(room, token, shown=shown), room)


@bp.post("/rooms/<room>/leave/<token>")
def leave(room: str, token: str) -> ResponseReturnValue:
    ticket = visits().end(room, token)
    return jsonify(token=ticket.token, status="left", left=True)


@bp.get("/rooms/<room>/draw")
def drop_draw(room: str) -> ResponseReturnValue:
    """A scheduled drop's draw: the commitment, and once drawn the seed and its size."""
    if reports().settings(room).kind != "live":
        raise RoomNotFound(f"room {room!r} has no scheduled drop")
    return jsonify(draw_json(room))


@bp.get("/rooms/<room>/qsize")
def qsize(room: str) -> ResponseReturnValue:
    summary = reports().summary(room)
    if summary is None:
        raise RoomNotFound(f"no room named {room!r}")
    return jsonify({"len": summary.waiting, "active": summary.active, "capacity": summary.capacity})


@cache
def openapi_document() -> bytes:
    """webapp/openapi.json, read once per process."""
    return resources.files("webapp").joinpath("openapi.json").read_bytes()


@bp.get("/openapi.json")
def openapi() -> ResponseReturnValue:
    """The OpenAPI 3.1 description of this API; docs/api.md is the readable guide."""
    return current_app.response_class(openapi_document(), mimetype="application/json")
