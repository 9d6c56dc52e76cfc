"""Sessions: Flask's signed cookie for everyone, a Redis session for logged-in admins.

Visitors keep Flask's signed cookie everywhere: a waiting page checks in every few
seconds, and a Redis write per poll for the session alone would cost as much as the
check-in. A logged-in admin's requests under ``/admin`` get a server-side session
instead, found by its own cookie (``wr_admin``: Path=/admin, HttpOnly, SameSite=Strict,
Secure behind HTTPS), so logging out or removing the account ends it at once and an
idle one expires. Until login, ``/admin`` pages (the login form and its CSRF token) use
the signed cookie too: nothing is stored in Redis for someone who has not logged in.

A visitor's cookie changes only when their session does, and a waiting page's polls
leave it alone, so the same signed cookie comes back every few seconds. Its signature is
checked once per process: a verified cookie's contents are kept (``VERIFIED_KEPT`` of
them, least recently used out) with the time it was signed, and a later request with
the very same text gets a copy, as long as it is younger than the session's lifetime
(the age rule of itsdangerous). Only text whose signature was checked is ever kept, so a
forged or altered cookie is checked, and refused, every time.

Flask-Session was the other candidate; it replaces the whole app's session, reads the
app-wide cookie name and lifetime in ``open_session``/``save_session`` (so a separate
cookie meant rewriting both), refuses Redis Cluster clients and keeps raw session ids
as key names. This module is the small part of it the panel needs.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from flask import Flask, Request, Response, request
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface, SessionMixin
from itsdangerous import BadSignature
from redis.exceptions import RedisError
from werkzeug.wrappers import Response as BaseResponse

from webapp.domain.admins import Admins, AdminSessions

log = logging.getLogger(__name__)
PANEL = "/admin"
COOKIE = "wr_admin"


def in_panel(path: str) -> bool:
    """Whether a path (without the script root) belongs to the admin panel."""
    return path == PANEL or path.startswith(PANEL + "/")


REDIS_FAILED = "webapp.redis_failed"  # environ: the Redis error this request already met
VERIFIED_KEPT = 4096  # visitors' signed cookies a process keeps verified (about 1 KB each)


class PanelSession(SecureCookieSession):
    """A logged-in admin's session; its data lives in Redis under the cookie's token."""

    def __init__(self, data: dict[str, Any], token: str) -> None:
        super().__init__(data)
        self.token = token
        self.ended = False


class PanelSessionInterface(SecureCookieSessionInterface):
    """The signed cookie, except for requests under /admin with a live panel session."""

    def __init__(self, sessions: AdminSessions, admins: Admins) -> None:
        self.sessions = sessions
        self.admins = admins
        # a verified cookie's text -> (when it was signed, its contents: never handed out)
        self._verified: OrderedDict[str, tuple[int, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if "HTTP_COOKIE" not in request.environ and app.secret_key:
            # No cookie at all (a JSON API client, a first visit): an empty session,
            # without parsing cookies or building the base class's signing serializer.
            return self.session_class()
        token = request.cookies.get(COOKIE) if in_panel(request.path) else None
        if token:
            try:
                found = self._resume(token)
            except RedisError as error:  # the panel's gate answers this request with 503
                log.warning("admin session not read: %s", error)
                request.environ[REDIS_FAILED] = error  # not asked again in this request
                found = None
            if found is not None:
                return found
        if app.config["SESSION_COOKIE_NAME"] not in request.cookies and app.secret_key:
            return self.session_class()  # only other cookies: as above
        return self._signed_cookie(app, request)

    def _signed_cookie(self, app: Flask, request: Request) -> SecureCookieSession | None:
        """Flask's ``open_session``, with the signature checked once per cookie text."""
        text = request.cookies.get(self.get_cookie_name(app))
        if not text or not app.secret_key:
            return super().open_session(app, request)
        data = self.verified(app, text)
        return self.session_class() if data is None else self.session_class(copy.deepcopy(data))

    def verified(self, app: Flask, text: str) -> dict[str, Any] | None:
        """The contents of a visitor's signed cookie (``text``), its signature checked
        once per process; None if forged, altered or expired. What is kept: a caller
        only reads it (``open_session`` hands out a copy; the waiting page's lean poll
        reads it outside Flask)."""
        max_age = int(app.permanent_session_lifetime.total_seconds())
        with self._lock:
            kept = self._verified.get(text)
            if kept is not None:
                self._verified.move_to_end(text)
        if kept is not None and 0 <= int(time.time()) - kept[0] <= max_age:  # itsdangerous' rule
            return kept[1]
        serializer = self.get_signing_serializer(app)
        if serializer is None:
            return None
        try:
            data, signed = serializer.loads(text, max_age=max_age, return_timestamp=True)
        except BadSignature:  # forged, altered or expired: a new session, as Flask's
            return None
        if not isinstance(data, dict):
            return None
        with self._lock:
            self._verified[text] = (int(signed.timestamp()), data)
            while len(self._verified) > VERIFIED_KEPT:
                self._verified.popitem(last=False)
        return data

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        if not isinstance(session, PanelSession):
            super().save_session(app, session, response)
            return
        response.vary.add("Cookie")
        if session.modified and not session.ended:
            self.sessions.save(session.token, dict(session))

    def log_in(self, app: Flask, session: SessionMixin, admin: str, response: BaseResponse) -> None:
        """Starts a session for ``admin`` under a new token, set as the cookie on
        ``response``. A session the browser already had ends: no token known before
        the login (one planted by someone else, say) is ever a logged-in one."""
        if isinstance(session, PanelSession):
            self.sessions.end(session.token)
            session.ended = True
        token = self.sessions.start({"admin": admin, "stamp": self.admins.stamp(admin)})
        response.set_cookie(COOKIE, token, **self._cookie(app))

    def log_out(self, app: Flask, session: SessionMixin, response: BaseResponse) -> None:
        """Ends the session in Redis (its cookie no longer works anywhere) and drops it."""
        if isinstance(session, PanelSession):
            self.sessions.end(session.token)
            session.ended = True
        response.delete_cookie(COOKIE, **self._cookie(app))

    def _resume(self, token: str) -> PanelSession | None:
        data = self.sessions.resume(token)
        if data is None:
            return None
        if self.admins.stamp(str(data.get("admin"))) != data.get("stamp"):
            self.sessions.end(token)  # the account was removed or its password replaced
            return None
        return PanelSession(data, token)

    def _cookie(self, app: Flask) -> dict[str, Any]:
        # No Expires: the browser forgets it on closing; Redis keeps the idle timeout
        return {
            "path": request.script_root + PANEL,
            "httponly": True,
            "samesite": "Strict",
            "secure": bool(app.config["SESSION_COOKIE_SECURE"]),
        }
