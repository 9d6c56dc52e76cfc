"""The footer's language picker: a POST form (CSRF like every form) that remembers the
choice in a cookie and goes back to the page it was sent from."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, redirect, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import BadRequest

from webapp.i18n import COOKIE, COOKIE_MAX_AGE, LANGUAGES, _

bp = Blueprint("language", __name__)


def local_path(wanted: str) -> str:
    """A path of this site to go back to, else the lobby. Never another site: browsers
    read a backslash as a slash and drop tabs and newlines, so anything that is not
    plain printable text, or that names a host once they are undone, goes to the lobby."""
    plain = all(" " < ch != "\x7f" for ch in wanted)
    parts = urlsplit(wanted.replace("\\", "/"))
    if plain and wanted.startswith("/") and not parts.scheme and not parts.netloc:
        return wanted
    return url_for("pages.home")


@bp.post("/language")
def choose() -> ResponseReturnValue:
    lang = request.form.get("lang", "")
    if lang not in LANGUAGES:
        raise BadRequest(_("This language is not one we offer: pick one from the list."))
    response = redirect(local_path(request.form.get("next", "")), 303)
    secure = bool(request.is_secure)
    response.set_cookie(
        COOKIE, lang, max_age=COOKIE_MAX_AGE, samesite="Lax", secure=secure, httponly=True
    )
    return response
