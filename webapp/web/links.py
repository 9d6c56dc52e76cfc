"""Signed tokens for a waitlist entry's links, keyed by ``SECRET_KEY`` (itsdangerous).

An entry id is public once a lottery is drawn (its participants are listed for anyone
to check), so it never opens anything on its own: the entry's page and the API's
``token`` carry ``entry_token`` (no expiry: the page is bookmarked for weeks), and the
confirmation link carries ``confirm_token`` (salt "confirm", expires). The signing
itself is ``webapp.domain.claims`` (the mailer, which has no Flask, signs the same).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from flask import current_app, url_for
from itsdangerous import BadSignature, URLSafeSerializer, URLSafeTimedSerializer

from webapp.domain.claims import sign_confirm, sign_entry
from webapp.domain.waitlist import LANGUAGES
from webapp.web.i18n import current_language

CONFIRM_MAX_AGE = 3 * 86400  # seconds a confirmation link works


def _entries() -> URLSafeSerializer:
    return URLSafeSerializer(current_app.config["SECRET_KEY"], salt="entry")


def _confirms() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="confirm")


def entry_token(room: str, entry: str) -> str:
    return sign_entry(current_app.config["SECRET_KEY"], room, entry)


def entry_of(room: str, token: str) -> str | None:
    """The entry id a token signed for this room names; None if forged or another room's."""
    try:
        signed = _entries().loads(token)
    except BadSignature:
        return None
    return _entry_in(signed, room)


def confirm_token(room: str, entry: str, email: str = "") -> str:
    return sign_confirm(current_app.config["SECRET_KEY"], room, entry, email)


def confirm_url(room: str, entry: str, email: str = "") -> str:
    """The absolute confirmation link to mail to ``email`` (inside a request or an app
    context with SERVER_NAME set)."""
    token = confirm_token(room, entry, email)
    return url_for("waitlist.confirm_form", token=token, _external=True)


class Confirmation(NamedTuple):
    room: str
    entry: str
    tag: str  # the address it was sent to (claims.address_tag); '' in older links


def confirmation_of(token: str, max_age: int = CONFIRM_MAX_AGE) -> Confirmation | None:
    """What a confirmation link confirms; None if tampered with or expired."""
    try:
        signed = _confirms().loads(token, max_age=max_age)
    except BadSignature:  # SignatureExpired is one
        return None
    if not (isinstance(signed, list) and len(signed) in (2, 3)):
        return None
    if not all(isinstance(part, str) for part in signed):
        return None
    return Confirmation(signed[0], signed[1], signed[2] if len(signed) == 3 else "")


def _entry_in(signed: Any, room: str) -> str | None:
    if isinstance(signed, list) and len(signed) == 2 and signed[0] == room:
        entry = signed[1]
        return entry if isinstance(entry, str) else None
    return None


def entry_language() -> str:
    """The joiner's language for its emails: the one the page speaks to them (the picker's
    choice, else the Accept-Language best match; webapp.web.i18n), one of LANGUAGES."""
    chosen = current_language()
    return chosen if chosen in LANGUAGES else "en"
