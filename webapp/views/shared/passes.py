"""A site room's pass in the visitor's hands (issue 23, docs/gate.md): the cookie the
room's page and the gate set, the page of the site the gate sent the visitor from, and
the pass and site in the JSON API's reply. Shared by the visitor's pages, the API and
the gate (``webapp.views.gate``), which import it, never each other."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from flask import current_app, request, session
from werkzeug.wrappers import Response

from webapp.domain.passes import cookie_name
from webapp.views import reports, services
from webapp.web.local_paths import is_local_path

if TYPE_CHECKING:
    pass

MAX_NEXT = 2000  # characters of the original request's path kept in the waiting page's link


def give_pass(response: Response, room: str, token: str) -> None:
    """A fresh pass for the holder of ``token``'s seat (the seat's one pass from now
    on), in the room's pass cookie; none if the ticket has ended."""
    renew_seconds = reports().settings(room).pass_renew_seconds
    fresh = services().seat_passes.hand(room, token, renew_seconds, services().clock())
    if fresh is not None:
        set_pass(response, room, fresh)


def set_pass(response: Response, room: str, fresh: str) -> None:
    """The room's pass cookie, holding ``fresh``."""
    config = current_app.config
    response.set_cookie(
        cookie_name(room),
        fresh,
        path="/",
        domain=config.get("PASS_COOKIE_DOMAIN") or None,
        secure=bool(config["SESSION_COOKIE_SECURE"]),
        httponly=True,
        samesite="Lax",
    )


def keep_next(room: str) -> None:
    """The page of the site the gate sent this visitor from (``?next=``), kept in the
    session until they are let in (checked again when used: ``site_target``)."""
    wanted = request.args.get("next")
    if wanted is not None and len(wanted) <= MAX_NEXT:
        session["site_next"] = {**session.get("site_next", {}), room: wanted}


def kept_next(room: str) -> str | None:
    kept = session.get("site_next", {})
    return kept.get(room) if isinstance(kept, dict) else None


def site_target(site_url: str, wanted: str | None) -> str:
    """Where an admitted visitor goes: ``wanted`` if it is a path on the site's origin,
    else the site's address itself (never another host: no open redirect)."""
    site = urlsplit(site_url)
    if not wanted or len(wanted) > MAX_NEXT:
        return site_url
    if is_local_path(wanted):
        return f"{site.scheme}://{site.netloc}{wanted}"
    asked = urlsplit(wanted)
    same = (asked.scheme, asked.netloc.lower()) == (site.scheme, site.netloc.lower())
    if same and not any(ord(ch) < 0x21 or ch == "\\" for ch in wanted):
        return wanted
    return site_url


def asked_by_a_visitor(destinations: tuple[str, ...]) -> bool:
    """Whether this request (the gate's: the proxy passes the browser's headers on) is
    one a visitor makes to be let in: a browser's fetch for one of ``destinations``
    (``Sec-Fetch-Dest``: a page, or a page's own request), or a client that names none;
    never an image, a stylesheet, a prefetch or a prerender."""
    headers = request.headers
    purpose = (headers.get("Sec-Purpose") or headers.get("Purpose") or "").lower()
    if "prefetch" in purpose or "prerender" in purpose:
        return False
    dest = headers.get("Sec-Fetch-Dest", "")
    return not dest or dest in destinations
