"""The admin JSON API under /api/admin (bearer token ``WEBAPP_ADMIN_TOKEN``; documented
in docs/api.md and /api/openapi.json). Wrong tokens are throttled per client address
with the panel's logins. Every change goes through ``Visits`` and is audited as "api"."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Blueprint, Response, jsonify, request
from flask.typing import ResponseReturnValue

from webapp.domain import plans
from webapp.domain.drops import MAX_SOLD, checked_request_id
from webapp.domain.reports import AuditEntry
from webapp.domain.rooms import InvalidInput, RoomNotFound, TicketNotFound
from webapp.domain.site_keys import SiteKeyNotFound
from webapp.views import reports, site_keys, visits
from webapp.views.shared.admin import (
    MAX_ADMIT,
    MAX_REQUEST_ID,
    admin_throttle,
    check_admin,
    csv_download,
)
from webapp.views.shared.json_body import json_object, whole_number
from webapp.views.shared.plans import make_plan
from webapp.web.links import entry_token
from webapp.web.security import larger_body

bp = Blueprint("admin_api", __name__, url_prefix="/api/admin")
WHO = "api"  # how the audit log names a change made with the bearer token
SUPPORT_CODE_MAX = 12  # longer is a ticket token (24 characters)
MAX_AUDIT = 5000  # entries in one answer


def admin_only(view: Callable[..., ResponseReturnValue]) -> Callable[..., ResponseReturnValue]:
    """The bearer token, throttled: past the limit of wrong ones, 429 for everything."""

    @wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> ResponseReturnValue:
        if (refused := check_admin()) is not None:
            return refused
        return view(*args, **kwargs)

    return admin_throttle(guarded)


def ticket_of(room: str, token: str) -> str:
    """A ticket named by its token, or by its support code (what a visitor reads out)."""
    if len(token) > SUPPORT_CODE_MAX:
        return token
    person = reports().find(room, token)
    if person is None and reports().find_settings(room) is None:
        raise RoomNotFound(f"no room named {room!r}")
    if person is None:
        raise TicketNotFound("no one in this room has that support code")
    return person.token


def query_number(name: str, low: int, high: int, default: int) -> int:
    """A whole number from the query string (digits only), else InvalidInput."""
    text = request.args.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit() and len(text) <= 12 and low <= int(text) <= high):
        raise InvalidInput(f"{name} must be a whole number from {low} to {high}")
    return int(text)


@bp.get("/rooms")
@admin_only
def list_rooms() -> ResponseReturnValue:
    """Every room with its settings and figures."""
    out = []
    for room in reports().overview(reports().now()):
        back = reports().back_of_line(room.name, room.waiting)
        out.append(
            {
                "name": room.name,
                **room.settings.for_api(),
                "active": room.active,
                "waiting": room.waiting,
                "joined_per_minute": room.joined_per_minute,
                "admitted_per_minute": room.admitted_per_minute,
                "dropped_per_minute": room.dropped_per_minute,
                "wait_at_back": None if back is None else round(back.wait, 1),
                "notice": room.notice or None,
            }
        )
    return jsonify(out)


@bp.put("/rooms/<room>")
@admin_only
@larger_body
def put_room(room: str) -> ResponseReturnValue:
    changes = json_object(required=True)
    created = reports().find_settings(room) is None
    settings = visits().configure(room, changes, who=WHO)
    return jsonify(name=room, **settings.for_api()), 201 if created else 200


@bp.get("/rooms/<room>")
@admin_only
def get_room(room: str) -> ResponseReturnValue:
    settings = reports().find_settings(room)
    if settings is None:
        raise RoomNotFound(f"no room named {room!r}")
    return jsonify(name=room, **settings.for_api())


@bp.delete("/rooms/<room>")
@admin_only
def delete_room(room: str) -> ResponseReturnValue:
    if not visits().delete(room, who=WHO):
        raise RoomNotFound(f"no room named {room!r}")
    return jsonify(deleted=room)


@bp.post("/rooms/<room>/admit")
@admin_only
def admit(room: str) -> ResponseReturnValue:
    """Lets the next ``count`` in line in; the same ``request_id`` again admits nobody."""
    body = json_object(required=True)
    count = whole_number(body, "count", 1, MAX_ADMIT, 1)
    request_id = body.get("request_id", "")
    if not isinstance(request_id, str) or len(request_id) > MAX_REQUEST_ID:
        raise InvalidInput(f"request_id must be text of at most {MAX_REQUEST_ID} characters")
    override = body.get("override_capacity", False)
    if not isinstance(override, bool):
        raise InvalidInput("override_capacity must be true or false")
    admission = visits().admit(room, count, request_id, override, who=WHO)
    return jsonify(admitted=joined_tokens(room, admission.tokens), replay=admission.replay)


def joined_tokens(room: str, tickets: tuple[str, ...]) -> list[str]:
    """The tokens the joins of these tickets returned: a waitlist's entries by their
    signed token (as its join and its links name them), a live room's as they are."""
    settings = reports().find_settings(room)
    if settings is not None and settings.kind == "waitlist":
        return [entry_token(room, entry) for entry in tickets]
    return list(tickets)


@bp.post("/rooms/<room>/remove/<token>")
@admin_only
def remove(room: str, token: str) -> ResponseReturnValue:
    ticket = visits().remove(room, ticket_of(room, token), who=WHO)
    return jsonify(token=ticket.token, status="removed")


@bp.post("/rooms/<room>/move/<token>")
@admin_only
def move(room: str, token: str) -> ResponseReturnValue:
    place = whole_number(json_object(required=True), "to", 1, 10_000_000, 1)
    ticket = visits().move(room, ticket_of(room, token), place, who=WHO)
    return jsonify(token=ticket.token, position=ticket.position)


@bp.post("/rooms/<room>/notice")
@admin_only
def notice(room: str) -> ResponseReturnValue:
    """Sets the room's notice; an empty text clears it."""
    text = json_object(required=True).get("text", "")
    if not isinstance(text, str):
        raise InvalidInput("text must be text")
    return jsonify(notice=visits().notice(room, text, who=WHO) or None)


@bp.get("/rooms/<room>/audit")
@admin_only
def audit(room: str) -> ResponseReturnValue:
    """The newest entries first (``?kind=`` to filter, ``?format=csv`` for CSV)."""
    if reports().find_settings(room) is None:
        raise RoomNotFound(f"no room named {room!r}")
    kinds = [k for k in request.args.getlist("kind") if k]
    count = query_number("count", 1, MAX_AUDIT, 200)
    form = request.args.get("format", "json")
    if form not in ("json", "csv"):
        raise InvalidInput("format must be json or csv")
    entries = reports().audit(room, count=count, kinds=kinds)
    if form == "csv":
        return audit_csv(room, entries)
    return jsonify([entry._asdict() for entry in entries])


def audit_csv(room: str, entries: list[AuditEntry]) -> Response:
    """The API's CSV: the entries as stored (Unix times, the engine's codes)."""
    return csv_download(f"audit-{room}.csv", AuditEntry._fields, entries)


@bp.post("/rooms/<room>/plan")
@admin_only
def plan(room: str) -> ResponseReturnValue:
    """A plan of a drop (issue 34): waits, the line by minute, the stock, the hosts; each
    input defaults to the room's settings and measured figures. Changes nothing."""
    wanted, made = make_plan(room, json_object(required=False))
    return jsonify(**made.as_dict(), inputs=plans.inputs_of(wanted))


@bp.post("/rooms/<room>/stock")
@admin_only
def stock(room: str) -> ResponseReturnValue:
    """A scheduled drop's stock: ``{"sold": n, "request_id"}`` counts n units sold (once
    per request id), ``{"left": n}`` sets what is left; at 0 the room is sold out."""
    body = json_object(required=True, known=("sold", "left", "request_id"))
    if ("sold" in body) == ("left" in body):
        raise InvalidInput('give either "sold" or "left"')
    if reports().find_settings(room) is None:
        raise RoomNotFound(f"no room named {room!r}")
    request_id = checked_request_id(body.get("request_id", ""))  # whichever is given
    if "sold" in body:
        sold = whole_number(body, "sold", 0, MAX_SOLD, 0)
        report = visits().record_sold(room, sold, request_id, who=WHO)
    else:
        report = visits().set_stock(room, whole_number(body, "left", 0, 1_000_000_000, 0), who=WHO)
    return jsonify(
        stock_left=report.left,
        sold=report.sold,
        replay=report.replay,
        sold_out=report.left is not None and report.left <= 0,
    )


@bp.post("/rooms/<room>/start")
@admin_only
def start_drop(room: str) -> ResponseReturnValue:
    """A scheduled drop's "start now": the pre-queue drawn and placed at once. A second
    call does nothing (``started`` false)."""
    if reports().find_settings(room) is None:
        raise RoomNotFound(f"no room named {room!r}")
    drawn = visits().start_drop(room, who=WHO)
    return jsonify(started=drawn >= 0, entries=max(drawn, 0))


@bp.post("/rooms/<room>/site-key")
@admin_only
def make_site_key(room: str) -> ResponseReturnValue:
    """A new site key of the room (``{"label": ...}`` optional), shown once: the site's
    server sends it to count stock (a release's ``sold``)."""
    body = json_object(required=False)
    label = body.get("label", "")
    if not isinstance(label, str):
        raise InvalidInput("label must be text")
    made = site_keys().make(room, label, reports().now(), who=WHO)
    return jsonify(id=made.id, key=made.key, label=made.label, created=made.created), 201


@bp.get("/rooms/<room>/site-keys")
@admin_only
def list_site_keys(room: str) -> ResponseReturnValue:
    """The room's live site keys (ids, labels, when made; never the keys)."""
    if reports().find_settings(room) is None:
        raise RoomNotFound(f"no room named {room!r}")
    return jsonify(site_keys=[key._asdict() for key in site_keys().live(room)])


@bp.delete("/rooms/<room>/site-keys/<key_id>")
@admin_only
def revoke_site_key(room: str, key_id: str) -> ResponseReturnValue:
    """Ends a site key at once (404 if the room has no live key of that id)."""
    if not site_keys().revoke(room, key_id[:64], reports().now(), who=WHO):
        raise SiteKeyNotFound("this room has no live site key of that id")
    return "", 204
