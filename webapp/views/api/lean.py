"""The lean JSON API (issues 26 and 32): a live room's check-in
(``GET /api/rooms/<room>/position/<token>``) and its plain join
(``POST /api/rooms/<room>/join`` with at most a name) answered without Flask.

Everyone in line polls the check-in, and everyone arriving at a drop joins at once, so
these are the requests a host serves most. Measured with py-spy on a worker under load
(docs/performance.md), Flask's request context, routing, hooks and response object took
about a fifth of a check-in's CPU, more than the check-in's own domain work. This WSGI
middleware answers the commonest cases itself: the same check-in (``Visits.check_in``:
the coalesced script call, the announcer) and the same join (``Admission.join``: the
limits, the puzzle, the pre-queue, the engine), the same replies and the same error
replies (``webapp.web.replies``), and it imports no other view module and no Flask (an
import contract says so). It sits inside the security headers and the request timing
(both WSGI middleware too), so its replies carry the same headers and count under the
routes' endpoints, ``api.position`` and ``api.join``; and inside the trusted proxies'
fix, so a join counts under the client's address as Flask's view would.

Anything else goes on to Flask untouched, before any Redis call of its own: another
method or path, a name that is not plain ASCII, a room that is unknown or a waitlist
(its entries are signed tokens: ``api.position`` answers them), a join whose body is
more than a small JSON object with a name (an email, a puzzle's solution, a customer's
token, a referral: ``api.join`` reads those, with its language and limits on size).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from redis.exceptions import RedisError

from webapp.domain.admission import Joined, JoinRequest, PuzzleRequired, api_identity
from webapp.domain.join_limits import Throttled
from webapp.domain.refusals import RoomError
from webapp.domain.rooms import clean_display_name
from webapp.domain.tickets import valid_room_name
from webapp.web import jsonio
from webapp.web.metrics import ENDPOINT
from webapp.web.replies import join_refusal, outage, room_refusal, standing_body

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask

    from webapp.services import Services

log = logging.getLogger("webapp.views.shared.errors")  # where the Flask view's refusals log
PREFIX = "/api/rooms/"
SMALL_BODY = 1024  # bytes: a join body larger than this goes to Flask (its size limits)
PLAIN = frozenset({"name"})  # what a plain join's body may hold


class LeanApi:
    """WSGI middleware: a live room's check-in and plain join through the JSON API,
    without Flask."""

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
        elif path.startswith(PREFIX) and environ.get("REQUEST_METHOD") == "POST":
            parts = path[len(PREFIX) :].split("/")
            if len(parts) == 2 and parts[1] == "join" and self.live(parts[0]):
                body = plain_body(environ)
                if body is not None:
                    environ[ENDPOINT] = "api.join"
                    return self.join(environ, start_response, parts[0], body)
        return self.app(environ, start_response)

    def live(self, room: str) -> bool:
        """A live room this process knows (its settings are cached: no Redis call)."""
        if not (room.isascii() and valid_room_name(room)):
            return False
        try:
            return self.built.reports.settings(room).kind == "live"
        except (RoomError, RedisError):  # Flask says so, in the visitor's terms
            return False

    def check_in(
        self, environ: WSGIEnvironment, start_response: StartResponse, room: str, token: str
    ) -> Iterable[bytes]:
        shown = shown_in(environ.get("QUERY_STRING", ""))
        try:
            standing = self.built.visits.check_in(room, token, shown=shown)
        except RoomError as error:
            status, headers = room_refusal(error)
            return reply(start_response, status, {"error": str(error)}, headers)
        except RedisError as error:
            self.built.metrics.redis_error()
            status, message, headers = outage("GET", environ.get("PATH_INFO", ""), error)
            return reply(start_response, status, {"error": message}, headers)
        body = standing_body(self.built, room, standing)
        return reply(start_response, 200, body, {"X-Poll-After-Seconds": str(standing.poll_after)})

    def join(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        room: str,
        body: dict[str, Any],
    ) -> Iterable[bytes]:
        """As ``api.join`` answers a join of a live room whose body has a name at most."""
        try:
            joining = JoinRequest(
                room,
                address=environ.get("REMOTE_ADDR") or "",
                identity=api_identity(environ.get("HTTP_IDEMPOTENCY_KEY", "")),
                name=clean_display_name(body.get("name")),
            )
            outcome = self.built.admission.join(joining)
        except (RoomError, Throttled) as error:
            if isinstance(error, Throttled):  # as the Flask view's handler logs it
                log.warning("throttled %s on POST %s (%s)", environ.get("REMOTE_ADDR"),
                            environ.get("PATH_INFO", ""), error.scope)  # fmt: skip
            settings = self.built.reports.settings(room)
            status, answer, headers = join_refusal(error, settings)
            return reply(start_response, status, answer, headers)
        except RedisError as error:
            self.built.metrics.redis_error()
            status, message, headers = outage("POST", environ.get("PATH_INFO", ""), error)
            return reply(start_response, status, {"error": message}, headers)
        if isinstance(outcome, PuzzleRequired):
            answer = {"error": "challenge_required", "challenge": outcome.challenge}
            return reply(start_response, 403, answer, {})
        if not isinstance(outcome, Joined):  # a live room's join answers with a place
            raise TypeError(f"a plain join came out as {outcome!r}")
        standing = outcome.standing
        answer = standing_body(self.built, room, standing)
        return reply(
            start_response, 200, answer, {"X-Poll-After-Seconds": str(standing.poll_after)}
        )


def plain_body(environ: WSGIEnvironment) -> dict[str, Any] | None:
    """A join's body when it is plain: empty, or a small JSON object with a name at most
    (``{}`` for an empty one); None for anything else, which Flask then reads (the body
    read here is put back for it)."""
    if "HTTP_TRANSFER_ENCODING" in environ:
        return None
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    if length == 0:
        return {}
    if length > SMALL_BODY or not json_type(environ.get("CONTENT_TYPE", "")):
        return None
    data = environ["wsgi.input"].read(length)
    environ["wsgi.input"] = io.BytesIO(data)  # as it was, should Flask read it
    try:
        body = jsonio.loads(data)
    except ValueError:  # Flask's view says what was wrong
        return None
    return body if isinstance(body, dict) and body.keys() <= PLAIN else None


def json_type(content_type: str) -> bool:
    """Whether a Content-Type is JSON, as Flask's ``request.is_json`` reads it."""
    mimetype = content_type.split(";", 1)[0].strip().lower()
    return mimetype == "application/json" or (
        mimetype.startswith("application/") and mimetype.endswith("+json")
    )


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
    """Around Flask, inside the trusted proxies' fix, the security headers and the
    timing: call it before those wrap the app."""
    app.wsgi_app = LeanApi(app.wsgi_app, built)  # type: ignore[method-assign]
