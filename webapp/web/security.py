"""Browser security: CSRF on every form and htmx POST, headers on every response, the
Origin check of the websocket handshake, and the throttle on wrong admin credentials.

The JSON API under /api/ is exempt from CSRF: it takes bearer tokens and ticket tokens
in the URL, never cookies, so a foreign page gains nothing by posting to it.
"""

from __future__ import annotations

import hmac
import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, current_app, render_template, request
from flask.globals import request_ctx
from flask.typing import ResponseReturnValue
from flask_limiter import Limiter, RateLimitExceeded
from flask_limiter.util import get_remote_address
from flask_wtf.csrf import CSRFError, CSRFProtect

from webapp.redis.keys import Keys
from webapp.web.i18n import _
from webapp.web.replies import THROTTLED

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)
csrf = CSRFProtect()
# Counted in Redis (every worker and host agrees), per client address, and only for
# refused credentials: an admin at work is never slowed down. Moving windows: never
# more refusals than the limit in any span of its window (a password guesser cannot
# time its tries past it); the lists hold at most the limit's few entries. (Joins are
# counted by webapp.domain.join_limits, one script for all of a join's limits.)
limiter = Limiter(key_func=get_remote_address, strategy="moving-window")
HSTS = "max-age=31536000; includeSubDomains"
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


# No 'unsafe-inline' and no 'unsafe-eval': every script and style is a file under
# /static, and htmx runs with allowEval off (templates/base.html, meta htmx-config).
def page_policy(form_targets: str = "", assets: str = "", styled: bool = False) -> str:
    """The pages' Content-Security-Policy; ``form_targets``: origins besides this one a
    form may lead to (a site room's join ends on its site); ``assets``: origins images
    may come from (a room's own page); ``styled``: a room's page template, whose inline
    styles apply (its markup is sanitized: no script in it, and none may run anyway)."""
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'" if styled else "style-src 'self'",
            f"img-src 'self' data: {assets}".strip(),
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            f"form-action 'self' {form_targets}".strip(),
            "frame-ancestors 'none'",
        ]
    )


CONTENT_SECURITY_POLICY = page_policy()
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    "Cross-Origin-Opener-Policy": "same-origin",
}
# A JSON reply is never a document: nothing in it may load, frame or be framed (the
# OWASP REST cheat sheet's set); the policies about documents (referrer, permissions,
# opener) have nothing to apply to.
DATA_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def larger_body(view: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a view whose request body may reach ``SETTINGS_MAX_CONTENT_LENGTH`` (a
    room's settings, with its page template) rather than ``MAX_CONTENT_LENGTH``."""
    view.larger_body = True  # type: ignore[attr-defined]
    return view


def _larger_bodies() -> None:
    """Before any hook reads the body (the CSRF check reads a form's): the view's limit."""
    view = current_app.view_functions.get(request.endpoint or "")
    if getattr(view, "larger_body", False):
        request.max_content_length = current_app.config["SETTINGS_MAX_CONTENT_LENGTH"]


def init_app(app: Flask, keys: Keys, exempt: Iterable[Blueprint] = ()) -> None:
    app.before_request(_larger_bodies)  # first: before the CSRF check reads the form
    csrf.init_app(app)
    for blueprint in exempt:
        csrf.exempt(blueprint)
    app.config.setdefault("RATELIMIT_STORAGE_URI", limits_storage_uri(app.config["REDIS_URL"]))
    app.config.setdefault(
        "RATELIMIT_STORAGE_OPTIONS",
        {
            "socket_timeout": float(app.config["REDIS_SOCKET_TIMEOUT"]),
            "socket_connect_timeout": float(app.config["REDIS_CONNECT_TIMEOUT"]),
            # The limits library puts its own prefix first ("LIMITS" by default): ours,
            # so every key of the app starts with WEBAPP_REDIS_PREFIX
            "key_prefix": keys.limits,
        },
    )
    limiter.init_app(app)
    if not (app.config.get("RATELIMIT_DEFAULT") or app.config.get("RATELIMIT_APPLICATION")):
        # No limit applies to every view: only the views decorated with
        # credential_failures() are limited, and their decorator checks. The hook the
        # limiter puts in front of every request would look for limits and find none,
        # about a tenth of a check-in's CPU (docs/performance.md).
        hooks = app.before_request_funcs.get(None, [])
        hooks[:] = [hook for hook in hooks if hook != limiter._check_request_limit]
        # Its after-request and teardown hooks then matter only where a decorated view
        # ran (it made the limiter's request context): skip them elsewhere.
        for table in (app.after_request_funcs, app.teardown_request_funcs):
            table[None] = [_when_limited(hook) for hook in table.get(None, [])]
    page, data = dict(HEADERS), dict(DATA_HEADERS)
    if app.config["SESSION_COOKIE_SECURE"]:
        page["Strict-Transport-Security"] = data["Strict-Transport-Security"] = HSTS
    app.wsgi_app = SecurityHeaders(app.wsgi_app, page, data)  # type: ignore[method-assign]

    @app.errorhandler(CSRFError)
    def csrf_refused(error: CSRFError) -> ResponseReturnValue:
        message = _(
            "This form has expired or did not come from this site, so nothing was changed. "
            "Go back, reload the page and try again."
        )
        return render_template("error.html", status=400, message=message), 400


class SecurityHeaders:
    """WSGI middleware: the security headers on every response, the page set or, for a
    JSON reply, the data set; a header the app set itself is kept. At the WSGI layer,
    on the plain header list: as a Flask hook, each header went through werkzeug's
    checks again on every request (docs/performance.md)."""

    def __init__(self, app: WSGIApplication, page: dict[str, str], data: dict[str, str]) -> None:
        self.app = app
        self.page = [(name.lower(), name, value) for name, value in page.items()]
        self.data = [(name.lower(), name, value) for name, value in data.items()]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        def with_headers(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            present, wanted = set(), self.page
            for name, value in headers:
                low = name.lower()
                present.add(low)
                if low == "content-type" and value.startswith("application/json"):
                    wanted = self.data
            extra = [(name, value) for low, name, value in wanted if low not in present]
            return start_response(status, headers + extra, exc_info)

        return self.app(environ, with_headers)


def _when_limited(hook: Callable[..., Any]) -> Callable[..., Any]:
    """The limiter's own hook, run only for a request a limit was checked on; any other
    hook unchanged."""
    owner = getattr(hook, "func", hook)  # the limiter registers partials and methods
    if getattr(owner, "__self__", None) is not limiter and not (
        getattr(hook, "args", ()) and hook.args[0] is limiter  # type: ignore[attr-defined]
    ):
        return hook

    def only_when_limited(arg: Any) -> Any:
        if hasattr(request_ctx._get_current_object(), "_limiter_request_context"):  # type: ignore[attr-defined]
            return hook(arg)
        return arg  # an after-request hook hands the response on; a teardown's is unused

    return only_when_limited


def credential_failures(
    scope: str, refused: Callable[[Any], bool] = lambda response: response.status_code == 401
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorates the views that check admin credentials: past ``ADMIN_FAILURE_LIMIT``
    refusals (``refused(response)``: a 401) from one client address, in every view of
    ``scope``, they answer 429 with ``Retry-After`` until the oldest refusal leaves the
    window."""
    return limiter.shared_limit(
        lambda: str(current_app.config["ADMIN_FAILURE_LIMIT"]), scope=scope, deduct_when=refused
    )


def is_admin_token(presented: str | None) -> bool:
    """``presented`` is ``WEBAPP_ADMIN_TOKEN`` (compared in constant time); never when
    the admin token is unset."""
    expected = current_app.config.get("ADMIN_TOKEN")
    return bool(expected and presented) and hmac.compare_digest(
        str(presented).encode(), str(expected).encode()
    )


def refused_credentials(what: str) -> None:
    """Logs a refused credential with the client's address (fail2ban can read it)."""
    log.warning(
        "refused %s from %s on %s %s", what, request.remote_addr, request.method, request.path
    )


def throttled(error: RateLimitExceeded) -> tuple[str, dict[str, str]]:
    """The message and headers of a 429: how long until the next try is counted."""
    current = limiter.current_limit
    wait = current.reset_at - time.time() if current is not None else 60
    scope = throttled_scope(error)
    log.warning(
        "throttled %s on %s %s (%s)", request.remote_addr, request.method, request.path, scope
    )
    message = THROTTLED.get(scope, THROTTLED[""])
    return message, {"Retry-After": str(max(math.ceil(wait), 1))}


def throttled_scope(error: RateLimitExceeded) -> str:
    """Which flask-limiter limit refused: admin-account, admin-device, admin-total, or
    '' (wrong credentials from one address). (A join's limits raise ``Throttled``, whose scope
    names its message in ``THROTTLED`` too.)"""
    scope = str(getattr(error.limit, "scope", "") or "")
    return scope if scope in THROTTLED else ""


def limits_storage_uri(redis_url: str) -> str:
    """The app's Redis in the notation of the ``limits`` library."""
    if redis_url.startswith("unix://"):
        return "redis+unix://" + redis_url.removeprefix("unix://")
    return redis_url


def same_origin(origin: str | None, scheme: str, host: str, allowed: Iterable[str] = ()) -> bool:
    """Whether a websocket handshake's Origin may use this visitor's session: the same
    scheme, host and port as the page (``scheme`` and ``host`` of the request).

    Browsers always send Origin on a websocket handshake, so a missing one is a
    non-browser client, which cannot borrow a visitor's cookies anyway.
    """
    if origin is None:
        return True
    if origin in allowed:
        return True
    page = _origin(f"{scheme}://{host}")
    return page is not None and _origin(origin) == page


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the default port filled in; None if unparsable."""
    try:
        parts = urlsplit(url.lower())
        scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
        if scheme not in ("http", "https") or not parts.hostname:
            return None
        return scheme, parts.hostname, parts.port or DEFAULT_PORTS[scheme]
    except ValueError:  # a port that is not a number, or out of range
        return None
