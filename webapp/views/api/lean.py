"""The lean check-in (issue 26): the JSON API's ``GET /api/rooms/<room>/position/<token>``
of a live room answered without Flask.

Everyone in line polls this endpoint, so it is the request a host serves most. Measured
with py-spy on a worker under load (docs/performance.md), Flask's request context,
routing, hooks and response object took about a fifth of a check-in's CPU, more than
the check-in's own domain work. This WSGI middleware answers the commonest case itself:
the same check-in (``Lobby.check_in``: the coalesced script call, the announcer), the
same reply and the same error replies (``webapp.web.replies``), and it imports no
other view module and no Flask (an import contract says so). It sits inside the
security headers and the request timing (both WSGI middleware too), so its replies
carry the same headers and count under the route's endpoint, ``api.position``.

Anything else goes on to Flask untouched, before any Redis call of its own: another
method or path, a name that is not plain ASCII, a room that is unknown or a waitlist
(its entries are signed tokens: ``api.position`` answers them).
"""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from redis.exceptions import RedisError

from webapp.domain.refusals import RoomError
from webapp.domain.tickets import valid_room_name
from webapp.web import jsonio
from webapp.web.metrics import ENDPOINT
from webapp.web.replies import outage, room_refusal, standing_body

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

    from webapp.services import Services

PREFIX = "/api/rooms/"


class LeanCheckIn:
    """WSGI middleware: a live room's check-in through the JSON API, without Flask."""

    def __init__(self, app: WSGIApplication, built: Services) -> None:
        self.app = app
        self.built = built

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        if path.startswith(PREFIX) and environ.get("REQUEST_METHOD") == "GET":
            parts = path[len(PREFIX) :].split("/")
            if len(parts) == 3 and parts[1] == "position" and parts[2] and self.live(parts[0]):
                environ[ENDPOINT] = "api.position"
                return self.check_in(environ, start_response, parts[0], parts[2])
        return self.app(environ, start_response)

    def live(self, room: str) -> bool:
        """A live room this process knows (its settings are cached: no Redis call)."""
        if not (room.isascii() and valid_room_name(room)):
            return False
        try:
            return self.built.lobby.settings(room).kind == "live"
        except (RoomError, RedisError):  # Flask says so, in the visitor's terms
            return False

    def check_in(
        self, environ: WSGIEnvironment, start_response: StartResponse, room: str, token: str
    ) -> Iterable[bytes]:
        shown = shown_in(environ.get("QUERY_STRING", ""))
        try:
            standing = self.built.lobby.check_in(room, token, shown=shown)
        except RoomError as error:
            status, headers = room_refusal(error)
            return reply(start_response, status, {"error": str(error)}, headers)
        except RedisError as error:
            self.built.metrics.redis_error()
            status, message, headers = outage("GET", environ.get("PATH_INFO", ""), error)
            return reply(start_response, status, {"error": message}, headers)
        body = standing_body(self.built, room, standing)
        return reply(start_response, 200, body, {"X-Poll-After-Seconds": str(standing.poll_after)})


def shown_in(query: str) -> str | None:
    """The ``shown`` argument (the first, as Flask's ``request.args.get``), or None."""
    if "shown" not in query:
        return None
    return next((value for name, value in parse_qsl(query, keep_blank_values=True)
                 if name == "shown"), None)  # fmt: skip


def reply(
    start_response: StartResponse, status: int, body: object, headers: dict[str, str]
) -> list[bytes]:
    data = jsonio.dumps(body).encode()
    start_response(
        f"{status} {HTTPStatus(status).phrase.upper()}",  # as werkzeug writes it
        [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
         *headers.items()],
    )  # fmt: skip
    return [data]


def init_app(app: Flask, built: Services) -> None:
    """Around Flask (and ProxyFix), inside the security headers and the timing: call it
    before ``security.init_app`` and ``metrics.init_app`` wrap the app."""
    app.wsgi_app = LeanCheckIn(app.wsgi_app, built)  # type: ignore[method-assign]
