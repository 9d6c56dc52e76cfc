"""The waiting page's poll on the lean path (issue 32): htmx's
``GET /rooms/<room>/line?t=...`` for a place still waiting, answered before Flask.

Every browser in line makes this request every few seconds, so it is the page a host
serves most. Flask's request context, hooks and response object cost about a fifth of
it (docs/performance.md). This WSGI middleware answers the common case itself with
the same parts the view uses: the signed cookie as the session interface verifies it
(``PanelSessionInterface.verified``, once per process), the visitor's ticket as the
session module reads it, the look and check-in of ``Visits.page_place``, the context of
``place.line_context``, and, in the visitor's language (``i18n.choose_language``),
the figures alone as JSON when the poll names the shape its page shows and that shape
holds (``X-Line-Shape``, ``place.line_update``: what waiting.js sends), else the
partial ``_line_status.html``; and the room pages' policy (``own_page.pages_policy``). Only
an application context is pushed, so the words, the formats and the room's settings
are read as in a view; URLs are built by the app's own routes.

Anything else goes on to Flask: another method or path, a request that is not htmx's,
no cookie or one that does not verify, a page whose ticket is not the session's live
one, a room that is not a live room this process knows or has its own page template,
and every place that is not waiting (its turn, ended, moved: those change the
session). Flask then looks again, so such a poll costs one more look: once per
visitor, at the change. A Redis error goes on too, marked (``REDIS_FAILED``), and Flask
answers it with the outage's own page at once: one wait for a frozen Redis, not two.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from redis.exceptions import RedisError

from webapp.domain.refusals import RoomError
from webapp.domain.settings import RoomSettings
from webapp.domain.tickets import public_id, valid_room_name
from webapp.views.shared import own_page, place, session
from webapp.web import jsonio
from webapp.web.admin_session import REDIS_FAILED, PanelSessionInterface
from webapp.web.cookies import cookies_of
from webapp.web.i18n import COOKIE as LANGUAGE_COOKIE
from webapp.web.i18n import choose_language, speaking
from webapp.web.metrics import ENDPOINT

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask import Flask
    from werkzeug.routing import MapAdapter

    from webapp.services import Services

PREFIX, SUFFIX = "/rooms/", "/line"
ENDPOINT_NAME = "line.status"
VARY = "Accept-Language, Cookie"  # as Flask's answer varies: the session, the language
VARY_SHAPE = f"Accept-Language, {place.SHAPE_HEADER}, Cookie"  # a poll's figures: the shape too
SHAPE_ENVIRON = "HTTP_" + place.SHAPE_HEADER.upper().replace("-", "_")
HTML, JSON = "text/html; charset=utf-8", "application/json"


class LeanPoll:
    """WSGI middleware: htmx's poll of a waiting place, without Flask's request."""

    def __init__(self, app: WSGIApplication, flask_app: Flask, built: Services) -> None:
        self.app = app
        self.flask = flask_app
        self.built = built
        self.template = flask_app.jinja_env.get_template("_line_status.html")

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        if (
            path.startswith(PREFIX)
            and path.endswith(SUFFIX)
            and environ.get("HTTP_HX_REQUEST") == "true"
            and environ.get("REQUEST_METHOD") == "GET"
        ):
            answer = self.poll(environ, path[len(PREFIX) : -len(SUFFIX)])
            if answer is not None:
                environ[ENDPOINT] = ENDPOINT_NAME
                body, headers = answer
                start_response("200 OK", headers)
                return [body]
        return self.app(environ, start_response)

    def poll(
        self, environ: WSGIEnvironment, room: str
    ) -> tuple[bytes, list[tuple[str, str]]] | None:
        """The partial and its headers, or None: Flask answers."""
        if not (room.isascii() and valid_room_name(room)):
            return None
        args = first_values(environ.get("QUERY_STRING", ""))
        shown_id = args.get("t")
        cookies = cookies_of(environ.get("HTTP_COOKIE", ""))
        text = cookies.get(self.flask.config["SESSION_COOKIE_NAME"])
        interface = self.flask.session_interface
        if not shown_id or not text or not isinstance(interface, PanelSessionInterface):
            return None
        data = interface.verified(self.flask, text)
        token = None if data is None else session.ticket(room, data)
        if data is None or token is None or public_id(token) != shown_id:
            return None  # no place, or not this page's: Flask says which ended state
        try:
            settings = self.built.reports.settings(room)
            if settings.kind != "live" or settings.page_template:
                return None
            found = self.built.visits.page_place(
                room, token, session.holder(room, data),
                shown=args.get("shown") or session.shown(room, data),
            )  # fmt: skip
            if found.state != "waiting" or found.standing is None:
                return None
            standing = found.standing
            language = choose_language(
                cookies.get(LANGUAGE_COOKIE, ""), environ.get("HTTP_ACCEPT_LANGUAGE", "")
            )
            with self.flask.app_context():
                with speaking(language, rendering=False):
                    context = place.line_context(
                        room,
                        standing,
                        polled=True,
                        seen=integer(args.get("seen")),
                        start=session.start(room, standing.ticket.position, data),
                        email=session.email(room, data),
                    )
                if environ.get(SHAPE_ENVIRON) == context["shape"]:  # only its figures
                    body = jsonio.dumps(place.line_update(context)).encode()
                    return body, self.headers(settings, body, JSON, VARY_SHAPE)
                with speaking(language):
                    html = self.template.render(context, url_for=urls(self.flask, environ))
        except RoomError:
            return None  # Flask's view says so, in the visitor's terms
        except RedisError as error:  # Flask answers the outage at once, not asking again
            environ[REDIS_FAILED] = error
            return None
        body = html.encode()
        return body, self.headers(settings, body, HTML, VARY)

    @staticmethod
    def headers(settings: RoomSettings, body: bytes, kind: str, vary: str) -> list[tuple[str, str]]:
        """As Flask's answer has them: the type, the length, no-store, Vary, the room
        pages' policy."""
        headers = [
            ("Content-Type", kind),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            ("Vary", vary),
        ]
        policy = own_page.pages_policy(settings)
        if policy:
            headers.append(("Content-Security-Policy", policy))
        return headers


def first_values(query: str) -> dict[str, str]:
    """Each argument's first value, as Flask's ``request.args.get`` reads it (as
    ``parse_qsl`` splits and decodes, without its work for the plain pairs a poll's URL
    mostly has)."""
    found: dict[str, str] = {}
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "%" in pair or "+" in pair:
            name, value = unquote(name.replace("+", " ")), unquote(value.replace("+", " "))
        found.setdefault(name, value)
    return found


def integer(value: str | None) -> int | None:
    """As ``request.args.get(name, type=int)``: None when absent or not a number."""
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def urls(app: Flask, environ: WSGIEnvironment) -> Any:
    """``url_for`` for the partial: the app's own routes, bound to this request as
    Flask binds them (its script root: the app mounted under a path), relative as
    Flask's are."""
    adapter: MapAdapter | None = app.create_url_adapter(app.request_class(environ))
    if adapter is None:
        raise RuntimeError("no URL adapter for a request")

    def url_for(endpoint: str, **values: Any) -> str:
        return adapter.build(endpoint, values)

    return url_for


def init_app(app: Flask, built: Services) -> None:
    """Around Flask, inside the trusted proxies' fix (its script root), the security
    headers and the timing: call it before those wrap the app."""
    app.wsgi_app = LeanPoll(app.wsgi_app, app, built)  # type: ignore[method-assign]
