"""The gate of site rooms (issue 23, docs/gate.md): the forward-auth endpoint a proxy
(nginx ``auth_request``, Caddy ``forward_auth``, Traefik ForwardAuth) asks before each
request to the protected site, the published keys the site can check a pass with, and
the release a site's server sends after checkout. The pass itself is
``webapp.domain.passes``. A visitor without one is seated by the gate itself when a
seat is free and nobody waits (issue 30: the same join decision as the room's page,
seat only); else the room's page puts them in line and hands out the pass once in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from flask import Blueprint, current_app, jsonify, make_response, redirect, request
from flask.typing import ResponseReturnValue
from werkzeug.wrappers import Response

from webapp.domain.admission import Joined, JoinRequest
from webapp.domain.drops import MAX_SOLD
from webapp.domain.join_limits import Throttled
from webapp.domain.passes import InvalidPass
from webapp.domain.rooms import (
    RoomError,
    RoomNotFound,
    public_id,
    valid_room_name,
)
from webapp.domain.site_keys import looks_like_site_key
from webapp.views import admission, passes, reports, services, site_keys, visits
from webapp.views.gate.fresh import VISITOR, bearer_of, pass_in
from webapp.views.shared.json_body import json_object, whole_number
from webapp.views.shared.passes import MAX_NEXT, asked_by_a_visitor, set_pass
from webapp.web.local_paths import is_local_path
from webapp.web.security import credential_failures, is_admin_token, refused_credentials

if TYPE_CHECKING:
    pass

bp = Blueprint("gate", __name__)
JWKS_MAX_AGE = 300  # seconds a proxy or a site may cache the published keys
PASS_HEADER = "X-Waiting-Room-Pass"  # beside the site key: the pass of the seat released
SITE_REALM = 'Bearer realm="site"'  # a wrong site key's 401


@bp.get("/gate/<room>")
def check(room: str) -> ResponseReturnValue:
    """204 for a valid pass of a live seat (a fresh one: no Redis call; past half its
    life: the seat renewed and a fresh pass in Set-Cookie), naming the visitor (the
    pass's sub) in X-Waiting-Room-Visitor; without a valid pass, 204 with a new seat's
    pass when one is free (``straight_in``), or for a path of ``bypass_paths``
    (``FreshGate``); else 401 naming the waiting page in X-Waiting-Room-Location, or
    with ``?redirect=1`` a 302 there."""
    if not valid_room_name(room):
        raise RoomNotFound(f"no room named {room[:80]!r}")
    built = services()
    now = built.clock()
    try:
        held = built.passes.verify(room, presented(), now)
    except InvalidPass:  # none, or none that counts: a free seat is taken at once
        return straight_in(room)
    if built.revocations.revoked(room, held, now):  # the seat ended lately
        return refused(room)
    if held.fresh(now):
        built.metrics.gate("fresh")
        return "", 204, {VISITOR: held.subject}
    renew_seconds = reports().settings(room).pass_renew_seconds
    # the seat's pass rotated and its check-in, in one script call (Visits.renew_pass)
    fresh = built.seat_passes.renewed(
        room, held, renew_seconds, now,
        lambda jti, presented: visits().renew_pass(room, held.token, jti, presented),
    )  # fmt: skip
    if fresh is None:  # a copy another holder renewed first, or the seat ended
        return refused(room)
    response = make_response("", 204)
    response.headers[VISITOR] = held.subject
    set_pass(response, room, fresh)
    built.metrics.gate("renewed")
    return response


def straight_in(room: str) -> ResponseReturnValue:
    """A visitor without a pass (issue 30): in a site room with a seat free, nobody
    waiting and no puzzle asked, the join decision (``Admission``, seat only) seats them,
    and the 204 carries the seat's pass in Set-Cookie for the proxy to hand on; else the
    401 that leads to the waiting page, which puts them in line."""
    if not asked_by_a_visitor(("document", "empty")):  # a favicon takes no seat
        return refused(room)
    try:
        settings = reports().settings(room)
        if not settings.site_url:
            return refused(room)
        joining = JoinRequest(room, address=request.remote_addr or "", seat_only=True)
        outcome = admission().join(joining)
    except (RoomError, Throttled):  # the waiting page says why, and joins if it can
        return refused(room)
    if not isinstance(outcome, Joined) or not outcome.standing.ticket.seated:
        return refused(room)
    token = outcome.standing.ticket.token
    now = services().clock()
    fresh = services().seat_passes.hand(room, token, settings.pass_renew_seconds, now)
    if fresh is None:  # ended in the meantime (an admin's removal)
        return refused(room)
    response = make_response("", 204)
    response.headers[VISITOR] = public_id(token)
    response.headers["Cache-Control"] = "no-store"
    set_pass(response, room, fresh)
    return response


@bp.get("/.well-known/jwks.json")
def jwks() -> ResponseReturnValue:
    """The public keys passes are signed with (RFC 7517): the current one, and the
    previous one while ``WEBAPP_PASS_KEY_PREVIOUS`` is set."""
    response = jsonify(passes().keys.jwks())
    response.headers["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
    return response


def wrong_site_key(response: Response) -> bool:
    """A release refused for a site key that is none of the room's live ones."""
    return response.status_code == 401 and response.headers.get("WWW-Authenticate") == SITE_REALM


@bp.post("/api/rooms/<room>/release")
@credential_failures("admin-credentials", refused=wrong_site_key)
def release(room: str) -> ResponseReturnValue:
    """A seat ends (``released``) and the next in line is let in at once. Two callers:
    the visitor's pass alone, as a bearer token (the holder's own seat, nothing more);
    or the room's site key (or the admin token) as the bearer, with the pass in
    ``X-Waiting-Room-Pass``: only then is ``{"sold": n}`` counted (403
    ``site_key_required`` without it, nothing changed)."""
    if not valid_room_name(room):
        raise RoomNotFound(f"no room named {room[:80]!r}")
    sold = whole_number(json_object(required=False), "sold", 0, MAX_SOLD, 0)
    credential = bearer()
    site = site_caller(room, credential)
    if site is None and credential is not None and looks_like_site_key(credential):
        refused_credentials("a site key")
        body = jsonify(error="site_key_invalid", message="that is not a live site key of this room")
        return body, 401, {"WWW-Authenticate": SITE_REALM}
    if sold and site is None:
        message = "only the site counts stock: send the room's site key as the bearer token"
        return jsonify(error="site_key_required", message=message), 403
    raw = request.headers.get(PASS_HEADER) if site else credential
    try:
        held = passes().verify(room, raw, services().clock())
    except InvalidPass as error:
        body = jsonify(error=f"no valid pass for this room: {error}")
        return body, 401, {"WWW-Authenticate": 'Bearer realm="release"'}
    ticket, recorded = visits().release(room, held.token, sold, who=site or "site")
    return jsonify(released=ticket.why == "released", why=ticket.why or None, sold=recorded)


def site_caller(room: str, credential: str | None) -> str | None:
    """Who the bearer token says the caller is, if it is the site: ``site key <id>``
    for a live site key of the room, ``api`` for the admin token; else None."""
    if not credential:
        return None
    if looks_like_site_key(credential):
        key_id = site_keys().check(room, credential)
        return None if key_id is None else f"site key {key_id}"
    return "api" if is_admin_token(credential) else None


def bearer() -> str | None:
    """The token of this request's ``Authorization: Bearer`` header."""
    return bearer_of(request.headers.get("Authorization", ""))


def presented() -> str | None:
    """This request's pass (``pass_in``)."""
    room = (request.view_args or {}).get("room", "")
    return pass_in(room, request.cookies, request.headers.get("Authorization", ""))


def original_path() -> str:
    """The path (and query) of the request the proxy asks about: nginx's
    X-Original-URI, or X-Forwarded-Uri (Caddy, Traefik); '' if none or not a path."""
    raw = request.headers.get("X-Original-URI") or request.headers.get("X-Forwarded-Uri") or ""
    return raw if is_local_path(raw) and len(raw) <= MAX_NEXT else ""


def waiting_page(room: str) -> str:
    """``<public url>/rooms/<room>?next=<original path>``."""
    base = str(current_app.config["PUBLIC_URL"]).rstrip("/")
    wanted = original_path()
    url = f"{base}/rooms/{room}"
    return f"{url}?next={quote(wanted, safe='/')}" if wanted else url


def refused(room: str) -> ResponseReturnValue:
    services().metrics.gate("refused")
    location = waiting_page(room)
    if request.args.get("redirect") == "1":
        response = redirect(location, 302)
    else:
        response = make_response("", 401)
        response.headers["X-Waiting-Room-Location"] = location
    response.headers["Cache-Control"] = "no-store"
    return response
