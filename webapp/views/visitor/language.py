"""The footer's language picker: a POST form (CSRF like every form) that remembers the
choice in a cookie and goes back to the page it was sent from."""

from __future__ import annotations

from flask import Blueprint, redirect, request, url_for
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import BadRequest

from webapp.web.i18n import COOKIE, COOKIE_MAX_AGE, LANGUAGES, _
from webapp.web.local_paths import is_local_path

bp = Blueprint("language", __name__)


def local_path(wanted: str) -> str:
    """A path of this site to go back to (``webapp.web.local_paths``), else the lobby."""
    return wanted if is_local_path(wanted) else url_for("pages.home")


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
