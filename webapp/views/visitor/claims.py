"""Claim links (issue 13, phase 2a): ``/claim/<token>`` from an admission email.

The GET only shows a button, since mail scanners prefetch links; the POST (with the
CSRF token) claims, once (``webapp.domain.claims``), then sends the visitor on to the
room's ``claim_redirect_url`` (303) or shows the "you're in" page. A tampered link gets
400, an expired, lapsed or used one 410, and none changes anything.
"""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_babel import lazy_gettext

from webapp.domain.claims import Claim, ClaimRefused, Claims, LiveClaims, SeatTaken, verify_claim
from webapp.views import reports, services
from webapp.views.shared import session

bp = Blueprint("claims", __name__)
REFUSALS = {
    "tampered": (
        400,
        lazy_gettext("This link is not one we sent: check that it was copied whole."),
    ),
    "expired": (410, lazy_gettext("This link has expired: the time to claim the place is over.")),
    "lapsed": (410, lazy_gettext("This link has expired: the time to claim the place is over.")),
    "used": (410, lazy_gettext("This link has been used already: it admits once.")),
    "missing": (410, lazy_gettext("This place no longer exists.")),
    "not_admitted": (410, lazy_gettext("This place is not open to claim.")),
}


def _now() -> float:
    return services().clock()


def _claims() -> Claims:
    return services().claims


def _live() -> LiveClaims:
    return services().live_claims


def _verified(token: str) -> Claim:
    return verify_claim(current_app.config["SECRET_KEY"], token, _now())


def refused(reason: str) -> ResponseReturnValue:
    status, message = REFUSALS[reason]
    return render_template("claim.html", refused=message, status=status), status


@bp.get("/claim/<token>")
def claim_form(token: str) -> ResponseReturnValue:
    try:
        claim = _verified(token)
    except ClaimRefused as error:
        return refused(error.reason)
    if claim.kind == "offered":  # a live room's seat
        refusal = _live().refusal(claim)
    else:
        refusal = _claims().refusal(claim, _now())
    if refusal is not None:
        return refused(refusal)
    return render_template("claim.html", claim=claim, token=token)


@bp.post("/claim/<token>")
def claim(token: str) -> ResponseReturnValue:
    try:
        claim = _verified(token)
    except ClaimRefused as error:
        return refused(error.reason)
    if claim.kind == "offered":
        return _take_seat(claim)
    outcome = _claims().claim(claim, _now())
    if outcome != "claimed":
        return refused(outcome)
    settings = reports().find_settings(claim.room)
    if settings is not None and settings.claim_redirect_url:
        return redirect(settings.claim_redirect_url, 303)
    return render_template("claim.html", claim=claim, done=True)


def _take_seat(claim: Claim) -> ResponseReturnValue:
    """A live room's offered seat: taken once, for this browser (as a move does), then
    the room's page; the browser that had it sees "moved" at its next poll."""
    taken = _live().take(claim, _now(), services().rooms.check_in)
    if not isinstance(taken, SeatTaken):
        return refused(taken)
    session.hold(claim.room, taken.holder)
    session.remember(claim.room, taken.token)
    return redirect(url_for("pages.room_page", room=claim.room), 303)
