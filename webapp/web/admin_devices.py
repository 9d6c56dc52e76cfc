"""The admin panel's device cookies (issue 29): OWASP's defence against lockout by
strangers ("Slow Down Online Guessing Attacks with Device Cookies").

Wrong passwords are counted per account name and in all (``webapp.web.login_limits``), so anyone
could lock an admin out of the panel by guessing at their name. After a successful login
the browser gets a device cookie (``wr_admin_device``): signed with the app's secret
(itsdangerous), naming the admin and a random id of its own, kept a year. A login
presenting a valid device cookie for the account it names is not under the account's
limits: it is limited on its own, by that cookie's id, so strangers' wrong passwords
never lock that browser out. The per-address throttle still applies to everyone.
"""

from __future__ import annotations

import secrets

from flask import current_app, request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.wrappers import Response

from webapp.web.admin_session import PANEL

COOKIE = "wr_admin_device"
MAX_AGE = 365 * 24 * 3600  # seconds a device cookie is valid after its login
SALT = "webapp.admin-device"  # signatures of other things with the secret never fit


def _signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(str(current_app.secret_key), salt=SALT)


def give_device(response: Response, admin: str) -> None:
    """A new device cookie for ``admin`` on ``response`` (each login: a new id)."""
    value = _signer().dumps({"admin": admin, "id": secrets.token_urlsafe(16)})
    response.set_cookie(
        COOKIE,
        value,
        max_age=MAX_AGE,
        path=request.script_root + PANEL,
        httponly=True,
        samesite="Lax",
        secure=bool(current_app.config["SESSION_COOKIE_SECURE"]),
    )


def device_of(admin: str) -> str | None:
    """The id of this request's device cookie if it is valid (signed by this app, not
    older than ``MAX_AGE``) and names ``admin``; else None."""
    raw = request.cookies.get(COOKIE)
    if not raw or not admin:
        return None
    try:
        data = _signer().loads(raw, max_age=MAX_AGE)
    except BadSignature:  # a forged, altered or expired cookie (SignatureExpired too)
        return None
    if not isinstance(data, dict) or data.get("admin") != admin:
        return None
    device = data.get("id")
    return device if isinstance(device, str) and device else None
