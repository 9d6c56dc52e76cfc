"""The JSON API (documented in docs/api.md)."""

from __future__ import annotations

import secrets
from functools import cache
from importlib import resources
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from flask.typing import ResponseReturnValue

from webapp.domain.admission import Joined, JoinRequest, PuzzleRequired, SignedUp
from webapp.domain.challenge import MAX_PAYLOAD
from webapp.domain.emails import MAX_EMAIL
from webapp.domain.estimate import Estimate
from webapp.domain.identity import MAX_IDENTITY_TOKEN
from webapp.domain.lobby import Standing
from webapp.domain.rooms import InvalidInput, RoomNotFound, TicketNotFound, clean_display_name
from webapp.domain.waitlist import Entry, KnownAddress, NotAWaitlist
from webapp.services import Services
from webapp.views import admission, lobby, reports, services, visits, waitlists
from webapp.views.shared.drops import draw_json, room_status, standing_fields
from webapp.views.shared.json_body import json_object
from webapp.views.shared.passes import site_pass
from webapp.web.links import entry_language, entry_of, entry_token

bp = Blueprint("api", __name__, url_prefix="/api")
MAX_IDEMPOTENCY_KEY = 128
MAX_REF = 32  # characters of a referral code that are looked at
WAITLIST_POLL = 300.0  # seconds: a waitlist moves in batches, and nobody checks in


def standing_json(standing: Standing, room: str) -> ResponseReturnValue:
    body = standing_body(services(), room, standing)
    return jsonify(body), 200, {"X-Poll-After-Seconds": str(standing.poll_after)}


def standing_body(built: Services, room: str, standing: Standing) -> dict[str, Any]:
    """A join's or a check-in's reply (docs/api.md). Reads no request: the lean check-in
    (``webapp.views.api.lean``) answers with it outside Flask."""
    ticket, guess = standing.ticket, standing.estimate
    body = {
        "token": ticket.token,
        "status": "admitted" if ticket.seated else "waiting",
        "position": ticket.position,
        "ahead": ticket.ahead,
        "wait": None if guess is None else round(guess.wait, 1),
        "variance": None if guess is None else round(guess.variance, 1),
        "range": None if guess is None else wait_range(guess),
        "shown": None if standing.shown is None else standing.shown.dumps(),
        "poll_after": standing.poll_after,
        "waiting": ticket.waiting,
        "active": ticket.active,
        "capacity": ticket.capacity,
        "room_status": ticket.room_status,
        "support_code": ticket.support_code,
        "notice": ticket.notice or None,
        "trend": standing.trend,
        "basis": standing.basis,
        "queueing_method": standing.method,
        "seat_chance": seat_chance(standing),
        **(site_pass(built, room, ticket) if ticket.seated else {}),
    }
    body.update(standing_fields(built, room, ticket))  # a scheduled drop's (views/drops.py)
    return body


def seat_chance(standing: Standing) -> dict[str, float] | None:
    """Random order's figure: the chance (0 to 1) of a seat within ``within`` seconds."""
    chance = standing.chance
    if chance is None:
        return None
    return {"within": round(chance.within), "chance": round(chance.chance, 3)}


def waitlist_json(room: str, entry: Entry) -> ResponseReturnValue:
    """A waitlist entry in the shape of a live standing (no estimate: it moves when an
    admin or the schedule admits), with its confirmation and referrals; ``token`` is
    signed, as entry ids are public once a lottery is drawn."""
    ticket = entry.ticket
    body = {
        "token": entry_token(room, entry.id),
        "status": entry.state if entry.state in ("admitted", "lapsed") else "waiting",
        "position": entry.position,
        "ahead": ticket.ahead,
        "wait": None,
        "variance": None,
        "range": None,
        "shown": None,
        "poll_after": WAITLIST_POLL,
        "waiting": ticket.waiting,
        "active": ticket.active,
        "capacity": ticket.capacity,
        "room_status": ticket.room_status,
        "support_code": entry.referral_code,
        "notice": ticket.notice or None,
        "trend": None,  # a waitlist has no pace to report
        "basis": None,
        "queueing_method": "fifo",  # a waitlist's own order is its ordering
        "seat_chance": None,
        "confirmed": entry.confirmed,
        "referral_code": entry.referral_code,
        "score": entry.score,
        "referrals": entry.referrals._asdict(),
    }
    return jsonify(body), 200, {"X-Poll-After-Seconds": str(WAITLIST_POLL)}


def text_field(body: dict[str, Any], name: str, most: int) -> str:
    value = body.get(name, "")
    if not isinstance(value, str) or len(value) > most:
        raise InvalidInput(f"{name} must be text of at most {most} characters")
    return value


def wait_range(guess: Estimate) -> list[int]:
    """The likely wait in whole seconds: one standard deviation either side."""
    return [round(bound) for bound in guess.range]


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
    key = request.headers.get("Idempotency-Key", "")
    if len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise InvalidInput(
            f"Idempotency-Key must be at most {MAX_IDEMPOTENCY_KEY} printable characters"
        )
    joining = JoinRequest(
        room,
        address=request.remote_addr or "",
        identity=f"api:{key}" if key else "",
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
    if lobby().settings(room).kind == "waitlist":
        return waitlist_json(room, waitlist_entry(room, token))
    return standing_json(lobby().check_in(room, token, shown=shown), room)


def waitlist_entry(room: str, token: str) -> Entry:
    entry = entry_of(room, token)
    if entry is None:
        raise TicketNotFound("no such entry on this waitlist")
    try:
        return waitlists().position(room, entry)
    except NotAWaitlist:  # it became a live room since the settings were cached
        raise TicketNotFound("no such entry on this waitlist") from None


@bp.post("/rooms/<room>/leave/<token>")
def leave(room: str, token: str) -> ResponseReturnValue:
    ticket = visits().end(room, token)
    return jsonify(token=ticket.token, status="left", left=True)


@bp.get("/rooms/<room>/draw")
def drop_draw(room: str) -> ResponseReturnValue:
    """A scheduled drop's draw: the commitment, and once drawn the seed and its size."""
    if lobby().settings(room).kind != "live":
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
