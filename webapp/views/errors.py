"""Every error becomes a clear answer: JSON under /api/, a friendly page elsewhere."""

from __future__ import annotations

import logging

from flask import Flask, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_limiter import RateLimitExceeded
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from webapp.domain import rooms as engine
from webapp.domain.estimate import Estimate
from webapp.security import throttled
from webapp.views.pages import wait_words

log = logging.getLogger(__name__)

STATUS = {
    engine.InvalidInput: 400,
    engine.RoomNotFound: 404,
    engine.TicketNotFound: 404,
    engine.TicketGone: 410,
    engine.RoomClosed: 409,
    engine.SettingsConflict: 409,
    engine.DrawPending: 409,
    engine.NotSeated: 409,
    engine.NotWaiting: 409,
    engine.JoinRefused: 503,
}


def wants_json() -> bool:
    return request.path.startswith("/api/")


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    outage: bool = False,
    retry: str = "",
) -> ResponseReturnValue:
    """JSON under /api/, else the friendly page (``outage``: we are down, not the line;
    ``retry``: when to come back, in words)."""
    if wants_json():
        return jsonify(error=message), status, headers or {}
    reload = request.method == "GET"  # an outage page asks again by itself
    page = render_template(
        "error.html", status=status, message=message, outage=outage, retry=retry, reload=reload
    )
    return page, status, headers or {}


def init_app(app: Flask) -> None:
    @app.errorhandler(engine.RoomError)
    def room_error(error: engine.RoomError) -> ResponseReturnValue:
        headers, retry = {}, ""
        if isinstance(error, engine.JoinRefused):
            headers["Retry-After"] = str(error.retry_after)
            retry = wait_words(Estimate(error.retry_after, 0.0), "open")
        # By the class or its nearest listed base: EntryNotFound is a TicketNotFound (404).
        status = next((STATUS[c] for c in type(error).__mro__ if c in STATUS), 400)
        return error_response(status, str(error), headers, retry=retry)

    @app.errorhandler(RedisError)
    def redis_down(error: RedisError) -> ResponseReturnValue:
        # Redis unreachable or failing: an outage to wait out, not a bug in the request
        log.warning("Redis error on %s %s: %s", request.method, request.path, error)
        message = "the waiting room is briefly unavailable; please try again in a moment"
        return error_response(503, message, {"Retry-After": "5"}, outage=True)

    @app.errorhandler(RateLimitExceeded)
    def too_many(error: RateLimitExceeded) -> ResponseReturnValue:
        message, headers = throttled(error)
        return error_response(429, message, headers)

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> ResponseReturnValue:
        status = error.code or 500
        message = {
            404: "not found",
            405: f"method {request.method} is not allowed here",
            413: "the request body is too large",
        }.get(status, error.description or error.name)
        headers = dict(error.get_headers()) if status == 405 else {}
        headers.pop("Content-Type", None)
        return error_response(status, message, headers)
