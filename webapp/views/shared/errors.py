"""Every error becomes a clear answer: JSON under /api/, a friendly page elsewhere."""

from __future__ import annotations

import logging
import re
from typing import NamedTuple

from flask import Flask, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_limiter import RateLimitExceeded
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from webapp.domain import rooms as engine
from webapp.domain.drops import PrequeueCapped
from webapp.domain.estimate import Estimate
from webapp.domain.identity import IdentityInvalid, IdentityRequired
from webapp.domain.join_limits import Throttled
from webapp.domain.settings import RoomSettings
from webapp.views import services
from webapp.views.shared.extras import room_about
from webapp.views.shared.words import explain, wait_words
from webapp.web.i18n import _, gone_reason
from webapp.web.replies import THROTTLED, join_refusal, outage, room_refusal
from webapp.web.security import throttled

log = logging.getLogger(__name__)


class Problem(NamedTuple):
    """An error page in plain words: what happened, why, and what to do next."""

    what: str
    why: str
    next: str


def problems() -> dict[int, Problem]:
    """The error pages' words, in the visitor's language."""
    return {
        400: Problem(
            _("Something in the request did not add up"),
            "",
            _("Go back, check what you typed, and try again."),
        ),
        403: Problem(
            _("That is not open to you"),
            _("This is not open to you: join the room from its page first."),
            _("Go back to the lobby and use its buttons."),
        ),
        404: Problem(
            _("We could not find that page"),
            _(
                "Nothing lives at this address. The link may be mistyped, or what it led "
                "to is gone."
            ),
            _("Pick a room from the lobby."),
        ),
        405: Problem(
            _("That does not work here"),
            _(
                "This address cannot be used that way, for example a form sent to a page "
                "that only shows things."
            ),
            _("Go back to the lobby and use its buttons."),
        ),
        409: Problem(
            _("That cannot be done right now"),
            _("The room is not in a state that allows it."),
            _("Go back to the lobby and see how the room stands."),
        ),
        410: Problem(
            _("Your place has ended"),
            "",
            _("You can join the line again from the lobby, at the back."),
        ),
        413: Problem(
            _("That was too much to send"),
            _("What was sent is larger than this site accepts."),
            _("Send something shorter."),
        ),
        429: Problem(
            _("Too many tries"),
            _("There were many wrong tries from your address in a short time, so we paused them."),
            _("Wait a little, then try again."),
        ),
        500: Problem(
            _("Something went wrong on our side"),
            _("The site hit a problem it did not expect. It is not something you did."),
            _("Try again in a moment; if it keeps happening, tell the people who run this site."),
        ),
    }


QUOTED = re.compile(r"""(['"])([^'"]*)\1""")


def plain(message: str) -> str:
    """A domain message as a sentence, without code quotes ("room 'a' ..." -> "room a")."""
    text = QUOTED.sub(r"\2", message).strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "." if text else ""


def problem_for(error: Exception | None, status: int, message: str) -> Problem:
    """The words of a browser's error page, in the visitor's language (the API keeps
    ``message``, English)."""
    if isinstance(error, engine.RoomNotFound):
        return Problem(
            _("We could not find that room"),
            _(
                "There is no room at this address. It may have been deleted, or the link "
                "may be mistyped."
            ),
            _("Pick a room from the lobby."),
        )
    if isinstance(error, engine.RoomClosed):
        if "waitlist" in message:
            return Problem(
                _("This room has a waitlist"),
                _("People sign up for it with their email instead of waiting on a page."),
                _("Sign up on the room's page."),
            )
        return Problem(
            _("This room is closed"),
            _("It takes no new visitors right now."),
            _("Come back later, or pick another room."),
        )
    if isinstance(error, engine.QueueRejecting):
        return Problem(
            _("This room is not letting anyone new in"),
            _(
                "Its organisers have stopped new joins for now. Nobody waiting loses their "
                "place and nobody inside loses their seat: it only turns new visitors away."
            ),
            _("Try again later: this page tries again by itself."),
        )
    if isinstance(error, IdentityRequired | IdentityInvalid):
        return Problem(
            _("Join from the site"),
            _(
                "This waiting room holds one place for each of its site's signed-in "
                "customers, so it takes joins through the site's own link."
            )
            if isinstance(error, IdentityRequired)
            else _(
                "The link that brought you here is not valid any more: it may have "
                "expired or been used already."
            ),
            _("Sign in on the site and follow its link to the waiting room again."),
        )
    if isinstance(error, PrequeueCapped):
        return Problem(
            _("The pre-queue is full for your address"),
            _(
                "A drop's pre-queue takes only a few entries from one address or network, "
                "so that nobody can buy a better chance in the draw by joining often."
            ),
            _("Join the line once the drop starts."),
        )
    if isinstance(error, Throttled):
        return Problem(
            _("Too many joins"),
            _(
                "Many joins came from your address or your network in a short time, so we "
                "paused them. People who share a network (an office, a school, a phone "
                "company) count together."
            ),
            _("Wait a minute, then try again."),
        )
    words = problems()
    if isinstance(error, engine.TicketGone):
        reason = gone_reason(error.why)
        return words[410]._replace(why=reason[:1].upper() + reason[1:] + ".")
    base = words.get(status, words[500] if status >= 500 else words[400])
    if isinstance(error, engine.RoomError):
        return base._replace(why=explain(error))
    if isinstance(error, HTTPException) and status == 400 and error.description:
        ours = not error.description.startswith("The browser")  # BadRequest(_("...")) only
        return base._replace(why=error.description if ours else "")
    if status == 409 and message:
        return base._replace(why=plain(message))
    return base


def wants_json() -> bool:
    """JSON under /api/, and for a room's page asked for JSON (its JSON mode)."""
    return request.path.startswith("/api/") or (
        request.endpoint == "pages.room_page" and asks_for_json()
    )


def asks_for_json() -> bool:
    """The request prefers JSON to HTML (``Accept: application/json``; a browser's
    Accept, or none, prefers HTML)."""
    best = request.accept_mimetypes.best_match(("text/html", "application/json"))
    return best == "application/json"


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    outage: bool = False,
    retry: str = "",
    error: Exception | None = None,
    retry_seconds: int = 0,
    site_link: str = "",
) -> ResponseReturnValue:
    """JSON under /api/, else the friendly page (``outage``: we are down, not the line;
    ``retry``: when to come back, in words; ``site_link``: the room's site, to go back
    to)."""
    if wants_json():
        return jsonify(error=message), status, headers or {}
    reload = request.method == "GET"  # an outage page asks again by itself
    rejoin = request.endpoint == "pages.join"  # a refused join is asked again, as a POST
    room = (request.view_args or {}).get("room")
    opens_at = room_about(room).opens_at if status == 409 and room else None
    page = render_template(
        "error.html",
        status=status,
        problem=problem_for(error, status, message),
        outage=outage,
        retry=retry,
        retry_seconds=retry_seconds,
        reload=reload,
        opens_at=opens_at,
        again=request.url if reload or rejoin else "",
        again_post=rejoin,
        site_link=site_link,
        rejecting=isinstance(error, engine.QueueRejecting),
    )
    return page, status, headers or {}


def init_app(app: Flask) -> None:
    @app.errorhandler(engine.RoomError)
    def room_error(error: engine.RoomError) -> ResponseReturnValue:
        status, headers = room_refusal(error)
        retry, seconds = "", 0
        if isinstance(error, engine.JoinRefused):
            retry = wait_words(Estimate(error.retry_after, 0.0), "open")
            seconds = int(error.retry_after)
        return error_response(
            status, str(error), headers, retry=retry, error=error, retry_seconds=seconds
        )

    @app.errorhandler(IdentityInvalid)
    @app.errorhandler(IdentityRequired)
    def identity_refused(error: IdentityInvalid | IdentityRequired) -> ResponseReturnValue:
        """401: a join the room's site must vouch for (issue 29). JSON names the reason
        (``identity_invalid``, ``identity_required``) and the site to come from."""
        site = room_about((request.view_args or {}).get("room", "")).site_url
        if wants_json():
            status, body, _ = join_refusal(error, RoomSettings(site_url=site))
            return jsonify(body), status
        return error_response(401, str(error), error=error, site_link=site)

    @app.errorhandler(RedisError)
    def redis_down(error: RedisError) -> ResponseReturnValue:
        services().metrics.redis_error()
        status, message, headers = outage(request.method, request.path, error)
        return error_response(status, message, headers, outage=True)

    @app.errorhandler(Throttled)
    def join_throttled(error: Throttled) -> ResponseReturnValue:
        log.warning("throttled %s on %s %s (%s)", request.remote_addr, request.method,
                    request.path, error.scope)  # fmt: skip
        headers = {"Retry-After": str(error.retry_after)}  # a refused join's page tries again
        return error_response(429, THROTTLED[error.scope], headers, error=error,
                              retry_seconds=error.retry_after)  # fmt: skip

    @app.errorhandler(RateLimitExceeded)
    def too_many(error: RateLimitExceeded) -> ResponseReturnValue:
        message, headers = throttled(error)  # wrong admin credentials (joins: Throttled)
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
        return error_response(status, message, headers, error=error)
