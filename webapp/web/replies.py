"""The JSON replies a place gets, built from the services alone (no request, no Flask):
the API's join and position replies, a room's page in JSON mode (issue 30), and the
status of a refusal or an outage. The Flask views answer with them, and so do the
lean check-in and join outside Flask (``webapp.views.api.lean``), so both answer alike
(docs/api.md)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

from redis.exceptions import RedisError

from webapp.domain import rooms as engine
from webapp.domain.drops import Outlook, has_schedule, phase_at
from webapp.domain.estimate import Estimate
from webapp.domain.identity import IdentityInvalid, IdentityRequired
from webapp.domain.join_limits import Throttled
from webapp.domain.lobby import Standing
from webapp.domain.refusals import NotOpenYet, SoldOut
from webapp.domain.settings import RoomSettings, iso_text
from webapp.domain.site_keys import SiteKeyNotFound, TooManySiteKeys
from webapp.domain.tickets import Ticket, public_id

if TYPE_CHECKING:
    from webapp.services import Services

log = logging.getLogger(__name__)

STATUS = {
    engine.InvalidInput: 400,
    engine.RoomNotFound: 404,
    engine.TicketNotFound: 404,
    engine.TicketGone: 410,
    engine.RoomClosed: 409,
    engine.SettingsConflict: 409,
    engine.DrawPending: 409,
    engine.NotSeated: 409,
    engine.NotWaiting: 409,
    engine.JoinRefused: 503,
    TooManySiteKeys: 409,
    SiteKeyNotFound: 404,
}


# A 429's message by the limit that refused (a join's ``Throttled.scope``, or
# flask-limiter's scope of a login limit; "": wrong admin credentials)
THROTTLED = {
    "": "too many wrong credentials from your address; please try again later",
    "join-address": "too many joins from your address; please try again later",
    "join-network": "too many joins from your network; please try again later",
    "signup-address": "too many sign-ups from your address; please try again later",
    "prequeue-address": "this address has made its most entries in the pre-queue; you "
    "can join the line once the drop starts",
    "prequeue-network": "this network has made its most entries in the pre-queue; you "
    "can join the line once the drop starts",
    "admin-account": "too many wrong passwords for this account; please try again later",
    "admin-device": "too many wrong passwords from this browser; please try again later",
    "admin-total": "too many wrong passwords; logins are paused, please try again later",
}


def room_refusal(error: engine.RoomError) -> tuple[int, dict[str, str]]:
    """A refusal's status (by its class or its nearest listed base: EntryNotFound is a
    TicketNotFound, 404) and headers (a refused join's Retry-After). Reads no request."""
    status = next((STATUS[c] for c in type(error).__mro__ if c in STATUS), 400)
    headers = {}
    if isinstance(error, engine.JoinRefused):
        headers["Retry-After"] = str(error.retry_after)
    return status, headers


def join_refusal(
    error: engine.RoomError | Throttled, settings: RoomSettings
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A refused join's JSON reply (status, body, headers), for the API's view and the
    lean join alike. The site's customer token
    missing or bad: 401 naming the reason and the site to come from; a drop not open
    yet: 409 with its times; sold out: 410; a limit: 429 with when to try again; any
    other refusal by its status."""
    if isinstance(error, IdentityInvalid | IdentityRequired):
        said: dict[str, Any] = {"error": error.code, "message": str(error)}
        site = settings.site_url
        return 401, said | ({"site_url": site} if site else {}), {}
    if isinstance(error, NotOpenYet):
        times = {"prequeue_at": iso_text(settings.prequeue_at),
                 "starts_at": iso_text(settings.starts_at)}  # fmt: skip
        return 409, {"error": "not_open_yet", **times}, {}
    if isinstance(error, SoldOut):
        return 410, {"error": "sold_out"}, {}
    if isinstance(error, Throttled):
        message = THROTTLED[error.scope]
        return 429, {"error": message}, {"Retry-After": str(error.retry_after)}
    status, headers = room_refusal(error)
    return status, {"error": str(error)}, headers


def outage(method: str, path: str, error: RedisError) -> tuple[int, str, dict[str, str]]:
    """Redis unreachable or failing: an outage to wait out, not a bug in the request
    (logged). Its status, message and headers; reads no request."""
    log.warning("Redis error on %s %s: %s", method, path, error)
    message = "the waiting room is briefly unavailable; please try again in a moment"
    return 503, message, {"Retry-After": "5"}


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
    body.update(standing_fields(built, room, ticket))  # a scheduled drop's
    return body


def seat_chance(standing: Standing) -> dict[str, float] | None:
    """Random order's figure: the chance (0 to 1) of a seat within ``within`` seconds."""
    chance = standing.chance
    if chance is None:
        return None
    return {"within": round(chance.within), "chance": round(chance.chance, 3)}


def wait_range(guess: Estimate) -> list[int]:
    """The likely wait in whole seconds: one standard deviation either side."""
    return [round(bound) for bound in guess.range]


class DropView(NamedTuple):
    """What a page says of a room's drop."""

    phase: str  # before | prequeue | open | ended | sold_out
    prequeue_at: int | None
    starts_at: int | None
    ends_at: int | None
    prequeued: int  # how many wait in the pre-queue
    drawn: bool  # the start's draw was held
    outlook: Outlook | None  # the stock, when tracked
    draw_id: str  # the ticket's draw id ('' without a ticket)
    in_prequeue: bool  # the ticket waits in the pre-queue (no place yet)

    @property
    def joinable(self) -> bool:
        return self.phase in ("prequeue", "open")


def applies(settings: RoomSettings) -> bool:
    return settings.kind == "live" and (has_schedule(settings) or settings.stock is not None)


def drop_view(
    built: Services, room: str, settings: RoomSettings, ticket: Ticket | None = None
) -> DropView | None:
    """The drop as a page shows it (None: the room has no schedule and no stock)."""
    if not applies(settings):
        return None
    drops = built.visits.drops
    state = drops.state(room)
    phase = phase_at(settings, built.reports.now(), state)
    in_prequeue = ticket is not None and ticket.state == "waiting" and ticket.position == 0
    # (a start placing the pre-queue has some of it still to place: they see it)
    prequeued = drops.prequeued(room) if phase == "prequeue" or in_prequeue else 0
    outlook = None
    if settings.stock is not None:
        ahead, waiting = (0, prequeued) if in_prequeue else (0, 0)
        if ticket is not None and not in_prequeue:
            ahead, waiting = ticket.ahead, ticket.waiting
        elif ticket is None:
            ahead = waiting = prequeued if phase == "prequeue" else 0
        outlook = drops.outlook(room, ahead, waiting)
        if outlook.stock_left is not None and outlook.stock_left <= 0:
            phase = "sold_out"
    return DropView(
        phase=phase,
        prequeue_at=settings.prequeue_at,
        starts_at=settings.starts_at,
        ends_at=settings.ends_at,
        prequeued=prequeued,
        drawn=state == "drawn",
        outlook=outlook,
        draw_id=public_id(ticket.token) if ticket is not None and settings.starts_at else "",
        in_prequeue=in_prequeue,
    )


def standing_fields(built: Services, room: str, ticket: Ticket) -> dict[str, Any]:
    """What a join or position reply of the JSON API adds for a drop: the status
    ``prequeue`` (no position yet, the start time, how many are in the pre-queue),
    the draw id, the stock left and whether it likely sells out before this turn."""
    drop = drop_view(built, room, built.reports.settings(room), ticket)
    if drop is None:
        return {}
    fields: dict[str, Any] = {"stock_left": None, "likely_sold_out": False}
    if drop.starts_at is not None:
        fields.update(draw_id=drop.draw_id, starts_at=iso_text(drop.starts_at))
    if drop.in_prequeue:  # no place yet, so no wait to estimate
        fields.update(status="prequeue", position=None, ahead=None, prequeue=drop.prequeued)
        fields.update(wait=None, variance=None, range=None, trend=None, basis=None)
    if drop.phase == "sold_out":
        fields["room_status"] = "sold_out"
    if drop.outlook is not None:
        fields.update(
            stock_left=drop.outlook.stock_left,
            likely_sold_out=drop.outlook.likely_sold_out,
            served_share=round(drop.outlook.served_share, 3),
        )
    return fields


def site_pass(built: Services, room: str, ticket: Ticket) -> dict[str, str]:
    """A seated ticket of a site room, in the JSON API: its pass and the site."""
    settings = built.reports.settings(room)
    if not settings.site_url:
        return {}
    fresh = built.seat_passes.hand(room, ticket.token, settings.pass_renew_seconds, built.clock())
    return {} if fresh is None else {"pass": fresh, "site_url": settings.site_url}
