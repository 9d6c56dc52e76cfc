"""A waitlist room's pages (issue 13): the sign-up form (``/rooms/<room>`` hands over
to ``signup_page``), the entry's own page, the confirmation link and the lottery's
public draw.

The entry's page is ``/rooms/<room>/entry/<token>``, the token signed (``webapp.web.links``):
bookmarkable for the weeks a waitlist lasts, and not guessable from the entry id, which
a lottery's draw publishes. The confirmation link's GET only shows a button (mail
scanners prefetch links); its POST, with the CSRF token, confirms.
"""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain.admission import JoinRequest, PuzzleRequired, SignedUp
from webapp.domain.claims import address_tag
from webapp.domain.draw import commitment_of, verify_draw
from webapp.domain.emails import MAX_EMAIL
from webapp.domain.rooms import InvalidInput, RoomNotFound, clean_display_name
from webapp.domain.waitlist import EntryNotFound, KnownAddress, NotAWaitlist, OldAddress
from webapp.views import admission, reports, waitlists
from webapp.views.shared import drops, puzzle, session
from webapp.views.shared.words import explain, resent_words
from webapp.web.i18n import _
from webapp.web.links import confirmation_of, entry_language, entry_of, entry_token

bp = Blueprint("waitlist", __name__)
MAX_REF = 32
DRAW_SHOWN = 10_000  # a draw this size or smaller is recomputed and listed on its page


def signup_page(
    room: str, status: int = 200, error: str = "", notice: str = ""
) -> ResponseReturnValue:
    """The form, or the entry's page for someone who signed up from this browser."""
    token = session.entries().get(room)
    if token is not None and not (error or notice) and entry_of(room, token) is not None:
        return redirect(url_for("waitlist.entry", room=room, token=token))
    form = request.form if request.method == "POST" else {}
    settings = reports().settings(room)
    context = {
        "room": room,
        "settings": settings,
        "name": form.get("name", session.name()),
        "email": form.get("email", ""),
        "ref": (form.get("ref") or request.args.get("ref", ""))[:MAX_REF],
        "error": error,
        "notice": notice,
        "challenge": settings.status != "closed" and admission().asks_puzzle(room),
        "draw": waitlists().draw_record(room) if settings.ordering == "lottery" else None,
    }
    return render_template("waitlist/join.html", **context), status


@bp.post("/rooms/<room>/signup")
def signup(room: str) -> ResponseReturnValue:
    try:
        name = clean_display_name(request.form.get("name", ""))
        if not name:
            return signup_page(room, 400, _("Please type a name that others will see."))
        outcome = admission().join(signing_up(room, name))
    except NotAWaitlist:  # it became a live room since the form was shown
        return redirect(url_for("pages.room_page", room=room), 303)
    except KnownAddress:  # signed up from another browser: the owner is mailed
        return signup_page(room, 200, notice=_(
            "This email address is signed up already. We have sent the link to its "
            "entry to that address."
        ))  # fmt: skip
    except InvalidInput as error:  # EmailRefused is one: say why, on the form
        return signup_page(room, 400, explain(error))
    if isinstance(outcome, PuzzleRequired):  # the room asks for a proof of work
        return signup_page(room, 403, puzzle.words())
    assert isinstance(outcome, SignedUp)  # a sign-up is nothing else
    token = entry_token(room, outcome.entry.id)
    session.keep_entry(room, token)
    if not session.name():
        session.set_name(name)
    return redirect(url_for("waitlist.entry", room=room, token=token), 303)


def signing_up(room: str, name: str) -> JoinRequest:
    """This browser's sign-up (one it made here already solves no puzzle again)."""
    return JoinRequest(
        room,
        address=request.remote_addr or "",
        held=session.entries().get(room),
        name=name,
        email=request.form.get("email", ""),
        lang=entry_language(),
        ref=request.form.get("ref", "")[:MAX_REF],
        device=session.visitor_id(),
        solution=request.form.get("altcha", ""),
        signup=True,
    )


@bp.get("/rooms/<room>/entry/<token>")
def entry(room: str, token: str) -> ResponseReturnValue:
    entry_id = entry_of(room, token)
    if entry_id is None:
        raise EntryNotFound("this link does not open an entry of this waitlist")
    try:
        found = waitlists().position(room, entry_id)
    except (EntryNotFound, RoomNotFound):  # the room was deleted since: sign up afresh
        if session.entries().get(room) == token:
            session.keep_entry(room, None)
        raise
    referral = url_for("pages.room_page", room=room, ref=found.referral_code, _external=True)
    context = {
        "room": room,
        "entry": found,
        "token": token,
        "settings": reports().settings(room),
        "referral_link": referral,
        "email": "" if found.confirmed else waitlists().email_of(room, entry_id),
        "draw": waitlists().draw_record(room) if found.ordering == "lottery" else None,
    }
    return render_template("waitlist/entry.html", **context)


@bp.post("/rooms/<room>/entry/<token>/confirmation")
def resend(room: str, token: str) -> ResponseReturnValue:
    """The confirmation email again (throttled): to the same address, or with ``email``
    to a corrected one, whose link alone confirms from then on."""
    entry_id = entry_of(room, token)
    if entry_id is None:
        raise EntryNotFound("this link does not open an entry of this waitlist")
    corrected = request.form.get("email", "")[:MAX_EMAIL]
    try:
        sent = waitlists().resend_confirmation(room, entry_id, corrected)
    except InvalidInput as error:  # EmailRefused: say why, the correction's form open
        flash(explain(error), "error")
        return redirect(url_for("waitlist.entry", room=room, token=token, fix=1), 303)
    address = waitlists().email_of(room, entry_id)
    flash(resent_words(sent, address, bool(corrected)), "info" if sent.sent else "error")
    return redirect(url_for("waitlist.entry", room=room, token=token), 303)


@bp.get("/confirm/<token>")
def confirm_form(token: str) -> ResponseReturnValue:
    found = confirmation_of(token)
    if found is None:
        return refused_link()
    entry = waitlists().position(found.room, found.entry)
    if found.tag and not entry.confirmed and found.tag != tag_now(found.room, found.entry):
        return refused_link(old=True)  # sent to an address corrected since
    return render_template("waitlist/confirm.html", room=found.room, entry=entry, token=token)


@bp.post("/confirm/<token>")
def confirm(token: str) -> ResponseReturnValue:
    found = confirmation_of(token)
    if found is None:
        return refused_link()
    try:
        waitlists().confirm(found.room, found.entry, found.tag)
    except OldAddress:
        return refused_link(old=True)
    flash(_("Your email is confirmed: you can now be let in when your turn comes."), "info")
    entry_page = url_for("waitlist.entry", room=found.room, token=entry_token(*found[:2]))
    return redirect(entry_page, 303)


def tag_now(room: str, entry: str) -> str:
    """The tag of the address the entry's emails go to now (``claims.address_tag``)."""
    return address_tag(entry, waitlists().email_of(room, entry))


def refused_link(old: bool = False) -> ResponseReturnValue:
    return render_template("waitlist/refused.html", old=old), 400


@bp.get("/rooms/<room>/draw")
def draw(room: str) -> ResponseReturnValue:
    """The lottery's draw in the open: the seed, its published hash, the participants in
    the order anyone can recompute (``verify_draw``)."""
    settings = reports().settings(room)
    if settings.kind == "live":
        return drops.draw_page(room)  # a scheduled drop's draw
    if settings.kind != "waitlist" or settings.ordering != "lottery":
        abort(404)
    record = waitlists().draw_record(room)
    order: list[str] | None = None
    if record.state == "drawn" and record.entries <= DRAW_SHOWN:
        order = verify_draw(record.seed, waitlists().draw_entries(room, 0, DRAW_SHOWN))
    honest = bool(record.seed) and commitment_of(record.seed) == record.commitment
    return render_template("waitlist/draw.html", room=room, record=record, order=order,
                           honest=honest)  # fmt: skip


@bp.get("/rooms/<room>/draw.txt")
def draw_entries(room: str) -> ResponseReturnValue:
    """The draw's participants, one entry id a line (in the order they were ranked)."""
    if reports().settings(room).kind == "live":
        return drops.draw_text(room)  # a scheduled drop's draw ids, in drawn order
    source = waitlists()
    record = source.draw_record(room)
    if record.state != "drawn":
        abort(404)

    def lines() -> Iterator[str]:
        for offset in range(0, record.entries, DRAW_SHOWN):
            ids = source.draw_entries(room, offset, DRAW_SHOWN)
            yield "".join(f"{entry_id}\n" for entry_id in ids)

    return lines(), 200, {"Content-Type": "text/plain; charset=utf-8"}
