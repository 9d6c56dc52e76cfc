"""How a place is answered in JSON: the API's join and position replies, and a room's
page in JSON mode (issue 30), which answer alike (docs/api.md)."""

from __future__ import annotations

from typing import Any

from flask import jsonify
from flask.typing import ResponseReturnValue

from webapp.domain.estimate import Estimate
from webapp.domain.lobby import Standing
from webapp.domain.rooms import TicketNotFound
from webapp.domain.waitlist import Entry, NotAWaitlist
from webapp.services import Services
from webapp.views import services, waitlists
from webapp.views.shared.drops import standing_fields
from webapp.views.shared.passes import site_pass
from webapp.web.links import entry_of, entry_token

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


def wait_range(guess: Estimate) -> list[int]:
    """The likely wait in whole seconds: one standard deviation either side."""
    return [round(bound) for bound in guess.range]


def waitlist_entry(room: str, token: str) -> Entry:
    entry = entry_of(room, token)
    if entry is None:
        raise TicketNotFound("no such entry on this waitlist")
    try:
        return waitlists().position(room, entry)
    except NotAWaitlist:  # it became a live room since the settings were cached
        raise TicketNotFound("no such entry on this waitlist") from None
