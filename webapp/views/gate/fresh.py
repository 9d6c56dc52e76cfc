"""The gate's fast path (issue 26): ``FreshGate``, WSGI middleware around the whole app
that answers the commonest gate checks without Flask. It imports no Flask and no other
view module (an import contract says so): only the domain and the services.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from webapp.domain.bypass import bypasses
from webapp.domain.passes import InvalidPass, cookie_name
from webapp.domain.rooms import RoomNotFound, valid_room_name
from webapp.web.cookies import cookies_of

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

    from webapp.services import Services

VISITOR = "X-Waiting-Room-Visitor"  # on a 204: the pass's sub, for the proxy to hand on


def bearer_of(header: str) -> str | None:
    """The token of an ``Authorization: Bearer`` header's value."""
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def pass_in(room: str, cookies: Mapping[str, str], authorization: str) -> str | None:
    """The pass: its cookie, else an ``Authorization: Bearer`` header (an app's)."""
    return cookies.get(cookie_name(room)) or bearer_of(authorization)


class FreshGate:
    """WSGI middleware, outermost: the gate's commonest answers without Flask (its
    request context, hooks and middleware cost about as much as the check itself:
    docs/performance.md): a fresh pass's 204, and the 204 for a path of the room's
    ``bypass_paths`` (from the process's cached settings). Anything else (no pass, a bad
    one, one due for renewal) goes on to ``check``, which answers it. Timed under
    ``gate.check`` like the route, so /metrics counts every check."""

    def __init__(self, app: WSGIApplication, built: Services) -> None:
        self.app = app
        self.passes = built.passes
        self.revocations = built.revocations
        self.clock = built.clock
        self.metrics = built.metrics
        self.reports = built.reports

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/gate/") and environ.get("REQUEST_METHOD") == "GET":
            started = time.perf_counter()
            room = path[len("/gate/") :]
            if valid_room_name(room):
                cookies = cookies_of(environ.get("HTTP_COOKIE", ""))
                raw = pass_in(room, cookies, environ.get("HTTP_AUTHORIZATION", ""))
                now = self.clock()
                try:
                    held = self.passes.verify(room, raw, now)
                except InvalidPass:
                    held = None
                if (
                    held is not None
                    and held.fresh(now)
                    and not self.revocations.revoked(room, held, now)
                ):
                    start_response("204 NO CONTENT", [(VISITOR, held.subject)])
                    self.metrics.gate("fresh")
                    self.metrics.observe("gate.check", "GET", "204", time.perf_counter() - started)
                    return []
                if held is None and self.bypassed(room, environ):
                    # never kept by a cache of the gate's answers keyed by the pass
                    start_response("204 NO CONTENT", [("Cache-Control", "no-store")])
                    self.metrics.observe("gate.check", "GET", "204", time.perf_counter() - started)
                    return []
        return self.app(environ, start_response)

    def bypassed(self, room: str, environ: WSGIEnvironment) -> bool:
        """Whether the original request's path is one of the room's ``bypass_paths``."""
        uri = environ.get("HTTP_X_ORIGINAL_URI") or environ.get("HTTP_X_FORWARDED_URI") or ""
        if not uri:
            return False
        try:
            settings = self.reports.settings(room)
        except RoomNotFound:
            return False
        return bool(settings.bypass_paths) and bypasses(settings.bypass_paths, uri)


def init_app(app: Flask, built: Services) -> None:
    """The gate's fast path around the whole app (after every other middleware)."""
    app.wsgi_app = FreshGate(app.wsgi_app, built)  # type: ignore[method-assign]
