"""The control panel's waitlist actions (issue 13), on the panel's blueprint: held
referral boosts released or voided, a credited one voided, the lottery drawn, and an
entry found by email or referral code with its referral tree. Thin views over
``webapp.domain.waitlist.Waitlists``; every change is audited under the admin's name."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain.waitlist import EntryNotFound
from webapp.views import waitlists
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import back, existing, panel_blueprint, who
from webapp.views.admin.words import HELD_WHY, LEGS, VOID_WHY

bp = panel_blueprint("admin_waitlist", __name__)
MAX_QUERY = 320  # an email address at most


def after(room: str) -> ResponseReturnValue:
    """Back to the entry's page when the form came from one, else to the room's."""
    entry = request.form.get("entry", "")[:64]
    if entry:
        return redirect(url_for("admin_waitlist.entry", room=room, entry=entry), 303)
    return back(room)


@bp.post("/rooms/<room>/held/<referee>/release")
@login_required
def release_referral(room: str, referee: str) -> ResponseReturnValue:
    waitlists().release(room, referee, who())
    flash("Released the referral: its referrer is credited (up to the cap).")
    return after(room)


@bp.post("/rooms/<room>/held/<referee>/void")
@login_required
def void_referral(room: str, referee: str) -> ResponseReturnValue:
    waitlists().void(room, referee, who())
    flash("Voided the referral: its referrer gets nothing for it (a credited one's points "
          "are taken back).")  # fmt: skip
    return after(room)


@bp.post("/rooms/<room>/draw")
@login_required
def draw(room: str) -> ResponseReturnValue:
    record = waitlists().draw(room, who())
    flash(f"Held the draw: {record.entries:,} entries ranked.")
    return back(room)


@bp.get("/rooms/<room>/entries")
@login_required
def find_entry(room: str) -> ResponseReturnValue:
    """?q= an email (any alias of it) or a referral code: that entry's page."""
    existing(room)
    query = request.args.get("q", "").strip()[:MAX_QUERY]
    found = waitlists().find(room, query) if query else None
    if found is None:
        flash(f"No entry has the email or referral code “{query}”." if query else
              "Type an email or a referral code to find an entry.", "error")  # fmt: skip
        return redirect(url_for("admin.room", room=room) + "#waitlist-title", 303)
    return redirect(url_for("admin_waitlist.entry", room=room, entry=found), 303)


@bp.get("/rooms/<room>/entries/<entry>")
@login_required
def entry(room: str, entry: str) -> ResponseReturnValue:
    """One entry: its standing, email, referrers up the chain and referral tree."""
    settings = existing(room)
    try:
        detail = waitlists().detail(room, entry[:64])
    except EntryNotFound:
        flash("That entry is not on this waitlist (any more).", "error")
        return redirect(url_for("admin.room", room=room), 303)
    return render_template(
        "admin/entry.html", room=room, settings=settings, detail=detail, legs=LEGS,
        held_why=HELD_WHY, void_why=VOID_WHY,
    )  # fmt: skip
