"""The panel's actions on people (issue 11): admit the next N or one person, move one
to the front, remove one (a place or a seat), and the room's notice. Each calls
``Visits``, which audits it under the admin's name and tells the room."""

from __future__ import annotations

from flask import flash, request
from flask.typing import ResponseReturnValue

from webapp.domain.rooms import Admission
from webapp.domain.visits import MAX_NOTICE
from webapp.views import reports, visits
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import back, existing, panel_blueprint, someone, who, whole_number
from webapp.views.admin.room import people_among, room_page
from webapp.views.admin.words import label
from webapp.views.shared.admin import MAX_ADMIT, MAX_REQUEST_ID

bp = panel_blueprint("admin_people", __name__)
DONE = {"waiting": "Removed {} from the line.", "offered": "Withdrew the seat offered to {}.",
        "admitted": "Ended the seat of {}."}  # fmt: skip


@bp.post("/rooms/<room>/admit")
@login_required
def admit(room: str) -> ResponseReturnValue:
    """The next N in line; the form's request id makes a double submit admit nobody twice."""
    count = whole_number(request.form.get("count", ""), 1, MAX_ADMIT)
    if count is None:
        error = f"Type a whole number of people from 1 to {MAX_ADMIT:,}."
        return room_page(room, 400, {"count": error}, request.form)
    request_id = request.form.get("request_id", "")[:MAX_REQUEST_ID]
    override = request.form.get("override") == "1"
    admission = visits().admit(room, count, request_id, override, who())
    flash(*admitted_words(room, admission, count))
    return back(room)


def admitted_words(room: str, admission: Admission, count: int) -> tuple[str, str]:
    """The flash after an admission: whom (by support code), or why nobody."""
    n = len(admission.tokens)
    codes = ", ".join(p.code for p in people_among(room, admission.tokens))
    if admission.replay:
        again = f" ({codes})" if codes else ""
        return f"That form was already sent: nobody was admitted twice{again}.", "message"
    if not n:
        return f"Nobody was admitted: {why_nobody(room)}", "error"
    asked = "" if n == count else f" of the {count} asked for"
    if codes:
        return f"Admitted {n}{asked}: {codes}", "message"
    emailed = "it is emailed its claim link" if n == 1 else "each is emailed its claim link"
    return f"Admitted {n} {'entry' if n == 1 else 'entries'}{asked}: {emailed}.", "message"


@bp.post("/rooms/<room>/people/<code>/admit")
@login_required
def admit_person(room: str, code: str) -> ResponseReturnValue:
    person = someone(room, code)
    if person is None:
        return back(room)
    override = request.form.get("override") == "1"
    if visits().admit_one(room, person.token, override, who()).tokens:
        flash(f"Admitted {label(person)}.")
    else:
        flash(f"{label(person)} was not admitted: {why_nobody(room)}", "error")
    return back(room)


@bp.post("/rooms/<room>/people/<code>/front")
@login_required
def move_to_front(room: str, code: str) -> ResponseReturnValue:
    person = someone(room, code)
    if person is not None:
        visits().move(room, person.token, 1, who())
        flash(f"Moved {label(person)} to the front of the line.")
    return back(room)


@bp.post("/rooms/<room>/people/<code>/remove")
@login_required
def remove_person(room: str, code: str) -> ResponseReturnValue:
    """The page asks first ("Remove" opens "Yes, remove"): this is the answer."""
    person = someone(room, code)
    if person is not None:
        visits().remove(room, person.token, who())
        flash(DONE.get(person.state, DONE["admitted"]).format(label(person)))
    return back(room)


@bp.post("/rooms/<room>/notice")
@login_required
def notice(room: str) -> ResponseReturnValue:
    text = "" if "clear" in request.form else request.form.get("text", "")
    length = len(" ".join(text.split()))
    if "clear" not in request.form and not length:
        error = "Type the notice to broadcast, or clear the notice."
        return room_page(room, 400, {"text": error}, request.form)
    if length > MAX_NOTICE:
        error = f"A notice is at most {MAX_NOTICE} characters; this one has {length}."
        return room_page(room, 400, {"text": error}, request.form)
    stored = visits().notice(room, text, who())
    flash(f"Broadcast the notice: “{stored}”" if stored else "Cleared the notice.")
    return back(room)


def why_nobody(room: str) -> str:
    if existing(room).kind == "waitlist":
        return "no confirmed entry is waiting."
    summary = reports().summary(room)
    if summary is None or not summary.waiting:
        return "nobody is waiting in line."
    taken = "the one seat is" if summary.capacity == 1 else f"all {summary.capacity:,} seats are"
    return f"{taken} taken. Tick “Admit even if the room is full” to admit anyway."
