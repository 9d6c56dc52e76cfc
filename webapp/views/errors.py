"""Every error becomes a clear answer: JSON under /api/, a friendly page elsewhere."""

from __future__ import annotations

import logging

from flask import Flask, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_babel import format_timedelta
from flask_limiter import RateLimitExceeded
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from webapp.domain import rooms as engine
from webapp.domain import waitlist
from webapp.domain.rooms import MAX_DISPLAY_NAME
from webapp.i18n import _, gone_reason
from webapp.security import throttled

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
    said: str = "",
) -> ResponseReturnValue:
    """JSON under /api/, else the friendly page (``outage``: we are down, not the line;
    ``retry``: when to come back, in words; ``said``: the page's message in the visitor's
    language, where it differs from the API's English ``message``)."""
    if wants_json():
        return jsonify(error=message), status, headers or {}
    reload = request.method == "GET"  # an outage page asks again by itself
    page = render_template(
        "error.html",
        status=status,
        message=said or message,
        outage=outage,
        retry=retry,
        reload=reload,
    )
    return page, status, headers or {}


def init_app(app: Flask) -> None:
    @app.errorhandler(engine.RoomError)
    def room_error(error: engine.RoomError) -> ResponseReturnValue:
        headers, retry = {}, ""
        if isinstance(error, engine.JoinRefused):
            headers["Retry-After"] = str(error.retry_after)
            retry = format_timedelta(error.retry_after)
        # By the class or its nearest listed base: EntryNotFound is a TicketNotFound (404).
        status = next((STATUS[c] for c in type(error).__mro__ if c in STATUS), 400)
        return error_response(status, str(error), headers, retry=retry, said=explain(error))

    @app.errorhandler(RedisError)
    def redis_down(error: RedisError) -> ResponseReturnValue:
        # Redis unreachable or failing: an outage to wait out, not a bug in the request
        log.warning("Redis error on %s %s: %s", request.method, request.path, error)
        message = "the waiting room is briefly unavailable; please try again in a moment"
        said = _(
            "The waiting room is briefly unavailable, because one of our servers is not answering."
        )
        return error_response(503, message, {"Retry-After": "5"}, outage=True, said=said)

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
        return error_response(status, message, headers, said=http_words(status, error))


def http_words(status: int, error: HTTPException) -> str:
    """What a browser visitor reads for an HTTP error, in their language."""
    if status == 404:
        return _("There is no page at this address: the link may be mistyped or out of date.")
    if status == 403:
        return _("This is not open to you: join the room from its page first.")
    if status == 405:
        return _("This page cannot be opened that way: go back and use its buttons instead.")
    if status == 413:
        return _("What you sent is too large for us to take.")
    if status == 400 and error.description and not error.description.startswith("The browser"):
        return error.description  # our own words (raised as BadRequest(_("...")))
    return _("Your browser sent something we could not understand.")


def explain(error: engine.RoomError) -> str:
    """A refusal of the engine in the visitor's words and language: what happened and why
    (the page adds what to do next). The JSON API keeps the engine's English."""
    english = str(error)
    if isinstance(error, engine.TicketGone):
        return _("Your place has ended: %(reason)s.", reason=gone_reason(error.why))
    if isinstance(error, waitlist.EntryNotFound):
        return _("This link does not open an entry of this waitlist: it may be incomplete.")
    if isinstance(error, engine.RoomNotFound):
        return _(
            "There is no room at this address: it may have been deleted, or the link is mistyped."
        )
    if isinstance(error, engine.TicketNotFound):
        return _("We could not find your place in this room: it may have ended a while ago.")
    if isinstance(error, engine.RoomClosed):
        if "waitlist" in english:
            return _("This room is a waitlist: sign up to it with your email on its page.")
        return _("This room is closed to new visitors for now.")
    if isinstance(error, engine.JoinRefused):
        if "full" in english:
            return _("The line is full right now.")
        return _("The wait is too long right now.")
    if isinstance(error, engine.NotSeated):
        return _("You do not hold a seat in this room (any more).")
    if isinstance(error, engine.NotWaiting):
        if "confirmed" in english:
            return _(
                "This entry has not confirmed its email yet: open the link in the email we sent."
            )
        return _("You are not waiting in this line (any more).")
    if isinstance(error, engine.DrawPending):
        return _("Nobody is let in before the lottery's draw.")
    if isinstance(error, waitlist.NotAWaitlist):
        return _("This room is not a waitlist: join it on its page instead.")
    if isinstance(error, waitlist.EmailRefused):
        if error.reason == "disposable":
            return _("Please sign up with a lasting email address, not a disposable one.")
        return _("That email address is not valid: please check it for typos.")
    if isinstance(error, engine.InvalidInput):
        if english.startswith("name must"):
            return _("A name can be at most %(count)s characters.", count=MAX_DISPLAY_NAME)
        return _("Something in this request did not add up, so nothing was changed.")
    return english  # the admin's refusals (settings conflicts, draws): the panel is English
