"""How a place is answered in JSON: the API's join and position replies, and a room's
page in JSON mode (issue 30), which answer alike (docs/api.md)."""

from __future__ import annotations

from flask import jsonify
from flask.typing import ResponseReturnValue

from webapp.domain.lobby import Standing
from webapp.domain.rooms import TicketNotFound
from webapp.domain.waitlist import Entry, NotAWaitlist
from webapp.views import services, waitlists
from webapp.web.links import entry_of, entry_token
from webapp.web.replies import standing_body

WAITLIST_POLL = 300.0  # seconds: a waitlist moves in batches, and nobody checks in


def standing_json(standing: Standing, room: str) -> ResponseReturnValue:
    body = standing_body(services(), room, standing)
    return jsonify(body), 200, {"X-Poll-After-Seconds": str(standing.poll_after)}


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


def waitlist_entry(room: str, token: str) -> Entry:
    entry = entry_of(room, token)
    if entry is None:
        raise TicketNotFound("no such entry on this waitlist")
    try:
        return waitlists().position(room, entry)
    except NotAWaitlist:  # it became a live room since the settings were cached
        raise TicketNotFound("no such entry on this waitlist") from None
