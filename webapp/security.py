"""Browser security: CSRF on every form and htmx POST, headers on every response, and
the Origin check of the websocket handshake.

The JSON API under /api/ is exempt from CSRF: it takes bearer tokens and ticket tokens
in the URL, never cookies, so a foreign page gains nothing by posting to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, render_template
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError, CSRFProtect

csrf = CSRFProtect()

# No 'unsafe-inline' and no 'unsafe-eval': every script and style is a file under
# /static, and htmx runs with allowEval off (templates/base.html, meta htmx-config).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def init_app(app: Flask, exempt: Iterable[Blueprint] = ()) -> None:
    csrf.init_app(app)
    for blueprint in exempt:
        csrf.exempt(blueprint)

    @app.after_request
    def security_headers(response: Response) -> Response:
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.errorhandler(CSRFError)
    def csrf_refused(error: CSRFError) -> ResponseReturnValue:
        message = "This form has expired or did not come from this site. Please try again."
        return render_template("error.html", status=400, message=message), 400


def same_origin(origin: str | None, host: str, allowed: Iterable[str] = ()) -> bool:
    """Whether a websocket handshake's Origin may use this visitor's session.

    Browsers always send Origin on a websocket handshake, so a missing one is a
    non-browser client, which cannot borrow a visitor's cookies anyway.
    """
    if origin is None:
        return True
    if origin in allowed:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()
