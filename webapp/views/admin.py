"""The admin control panel (issue 11): the rooms at a glance, one room's line, seats,
settings, charts and audit log, and every admin action as an HTML form.

Thin views: parse the form, call ``Visits`` (every change to people, audited by the
engine under the admin's name) or ``WaitingRooms`` (a room's settings, as the admin API
does), read through ``Reports``, render. Each POST answers 303 back to the page with a
flash saying what happened; bad input re-renders the page with the errors (400) and
changes nothing; the engine's refusals become a flash error.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain.estimate import Estimate
from webapp.domain.reports import PAGE, AuditEntry, Person
from webapp.domain.rooms import RoomError, RoomNotFound, valid_room_name
from webapp.domain.settings import (
    BY_NAME,
    SETTINGS,
    STATUSES,
    InvalidSetting,
    RoomSettings,
    Setting,
)
from webapp.domain.visits import MAX_NOTICE
from webapp.views import charts, lobby, reports, rooms, visits, waitlists
from webapp.views.admin_api import MAX_ADMIT, MAX_REQUEST_ID, audit_csv
from webapp.views.admin_auth import current_admin, login_required
from webapp.views.errors import error_response
from webapp.views.words import wait_words

bp = Blueprint("admin", __name__, url_prefix="/admin")
CHOICES = {"open": "Open", "paused": "Paused", "closed": "Closed", "auto": "Automatic",
           "manual": "Manual", "live": "Live", "waitlist": "Waitlist", "fifo": "First come",
           "priority": "Priority", "lottery": "Lottery"}  # fmt: skip
STATUS_ACTIONS = {"open": "Open the room", "paused": "Pause admissions", "closed": "Close the room"}
AUDIT_KINDS = {"create": "Room created", "settings": "Settings changed", "admit": "Admitted",
               "remove": "Removed", "move": "Moved in line", "notice": "Notice broadcast",
               "notice_cleared": "Notice cleared", "referral_credit": "Referral credited",
               "referral_hold": "Referral held for review", "referral_void": "Referral void",
               "draw_commit": "Lottery seed committed", "draw": "Lottery drawn",
               "lapse": "Place lapsed unclaimed"}  # fmt: skip
HELD_WHY = {"network": "the same network as the referrer", "device": "the referrer's device",
            "address": "an address with many entries", "velocity": "too many referrals in an "
            "hour"}  # fmt: skip
DETAILS = {
    ("admit", "line"): "from the line",
    ("admit", "direct"): "on joining (a seat was free)",
    ("remove", "waiting"): "was waiting in line",
    ("remove", "offered"): "was offered a seat",
    ("remove", "admitted"): "held a seat",
}
AUDIT_SHOWN = 500  # newest entries on the audit page (the CSV has up to 5,000)
SEATED_SHOWN = 200  # seats listed on a room's page (search finds the others)
SCATTER_SHOWN = 500  # newest admissions drawn in the accuracy chart


def who() -> str:
    return current_admin() or ""


def is_partial(target: str) -> bool:
    """An htmx request for one element of the page (not a history restore)."""
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-Target") == target
        and "HX-History-Restore-Request" not in request.headers
    )


@bp.context_processor
def panel_context() -> dict[str, Any]:
    return {"SETTINGS": SETTINGS, "CHOICES": CHOICES, "admin": current_admin(),
            "MAX_NOTICE": MAX_NOTICE, "MAX_ADMIT": MAX_ADMIT, "PAGE": PAGE,
            "STATUS_ACTIONS": STATUS_ACTIONS}  # fmt: skip


# -- the rooms ----------------------------------------------------------------


@bp.get("/")
@login_required
def overview() -> ResponseReturnValue:
    if is_partial("rooms"):
        return render_template("admin/_overview.html", **overview_context())
    return overview_page()


def overview_context() -> dict[str, Any]:
    now = lobby().now()
    found = reports().overview(now)
    backs = [lobby().back_of_line(room.name, room.waiting) for room in found]
    return {"rooms": list(zip(found, backs, strict=True)), "now": now}


def overview_page(
    status: int = 200,
    errors: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
) -> ResponseReturnValue:
    values = form or {s.name: s.to_text(s.default) for s in SETTINGS}
    page = render_template(
        "admin/overview.html", **overview_context(), errors=errors or {}, values=values
    )
    return page, status


@bp.post("/rooms")
@login_required
def create_room() -> ResponseReturnValue:
    name = request.form.get("name", "").strip()
    values, errors = parse_settings(request.form)
    if not valid_room_name(name):
        errors = {"name": "A room name is 1 to 64 characters: a-z, 0-9 and -.", **errors}
    elif rooms().settings(name) is not None:
        errors = {"name": f"There is already a room named {name}.", **errors}
    if errors:
        return overview_page(400, errors, request.form)
    visits().configure(name, values, who=who())
    flash(f"Created the room {name}.")
    return redirect(url_for("admin.room", room=name), 303)


# -- one room -----------------------------------------------------------------


@bp.get("/rooms/<room>")
@login_required
def room(room: str) -> ResponseReturnValue:
    page = max(request.args.get("page", 1, type=int) or 1, 1)
    query = request.args.get("q", "").strip()[:64]
    if is_partial("line"):  # paging or searching the line with htmx
        existing(room)
        return render_template("admin/_line.html", **line_context(room, page, query))
    return room_page(room, page=page, query=query)


def room_page(
    room: str,
    status: int = 200,
    errors: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
    page: int = 1,
    query: str = "",
) -> ResponseReturnValue:
    """The room's page; after bad input, ``errors`` by field and the ``form`` as sent."""
    settings = rooms().settings(room)
    summary = reports().summary(room)
    if settings is None or summary is None:
        return missing(room)
    now = lobby().now()
    values = dict(form or {})
    for setting in SETTINGS:
        values.setdefault(setting.name, setting.to_text(getattr(settings, setting.name)))
    seated = reports().seated(room)
    context = {
        **line_context(room, page, query, now),
        "settings": settings,
        "summary": summary,
        "back": lobby().back_of_line(room, summary.waiting),
        "seated": seated[:SEATED_SHOWN],
        "seated_total": len(seated),
        "charts": history_charts(room, now),
        "accuracy": accuracy(room, now),
        "errors": errors or {},
        "values": values,
        "request_id": secrets.token_urlsafe(16),
        "waitlist": waitlist_context(room) if settings.kind == "waitlist" else None,
    }
    return render_template("admin/room.html", **context), status


def waitlist_context(room: str) -> dict[str, Any]:
    """A waitlist's figures, its held referral boosts and its lottery's draw (the
    waitlist's own actions are in ``admin_waitlist``)."""
    return {"figures": waitlists().figures(room), "held": waitlists().held(room),
            "draw": waitlists().draw_record(room), "why": HELD_WHY,
            "mail": waitlists().mail_figures(room)}  # fmt: skip


def line_context(room: str, page: int, query: str, now: float | None = None) -> dict[str, Any]:
    """A page of the line (50 people), or the people matching ``query``."""
    now = lobby().now() if now is None else now
    if query:
        people = reports().search(room, query)
        return {"room": room, "people": people, "total": len(people), "page": 1,
                "pages": 1, "query": query, "now": now}  # fmt: skip
    line = reports().line(room, (page - 1) * PAGE)
    pages = max(math.ceil(line.total / PAGE), 1)
    if page > pages:  # the line got shorter since that link was made: its last page
        page = pages
        line = reports().line(room, (page - 1) * PAGE)
    return {"room": room, "people": line.people, "total": line.total, "page": page,
            "pages": pages, "query": "", "now": now}  # fmt: skip


def history_charts(room: str, now: float) -> list[dict[str, Any]]:
    """The last hour a point a minute, the last day a point per 10 minutes: the line,
    the seats taken and the admissions per minute."""
    spans = []
    for title, minutes, size in (("Last hour", 60, 1), ("Last 24 hours", 1440, 10)):
        history = reports().history(room, now, minutes)
        starts = [m or 0.0 for m in history["minute"]]
        times = starts[len(starts) % size :: size]  # each point's first minute
        series = {
            "line": charts.binned(history["w"], size),
            "seats": charts.binned(history["s"], size),
            "admitted": charts.binned(history["admitted"], size, rate=True),
        }
        figures = [
            charts.line_chart(times, series["line"], "People in line", "people"),
            charts.line_chart(times, series["seats"], "Seats taken", "seats"),
            charts.line_chart(times, series["admitted"], "Admissions per minute"),
        ]
        rows = list(zip(times, series["line"], series["seats"], series["admitted"], strict=True))
        spans.append({"title": title, "slug": f"m{minutes}", "charts": figures, "rows": rows})
    return spans


def accuracy(room: str, now: float) -> dict[str, Any]:
    hour, day = reports().accuracy(room, now, 3600), reports().accuracy(room, now, 86400)
    points = [(actual, predicted) for _at, predicted, actual in day.points[-SCATTER_SHOWN:]]
    chart = charts.scatter_chart(points, "Estimated against actual wait, last 24 hours")
    return {"windows": [("Last hour", hour), ("Last 24 hours", day)], "chart": chart}


def missing(room: str) -> ResponseReturnValue:
    return render_template("admin/missing.html", room=room), 404


@bp.post("/rooms/<room>/settings")
@login_required
def save_settings(room: str) -> ResponseReturnValue:
    current = existing(room)
    values, errors = parse_settings(request.form)
    if errors:
        return room_page(room, 400, errors, request.form)
    was = current.as_dict()
    changes = {name: value for name, value in values.items() if was[name] != value}
    if changes:
        visits().configure(room, changes, who=who())
        said = "; ".join(
            f"{BY_NAME[name].label} {shown(name, was[name])} → {shown(name, value)}"
            for name, value in changes.items()
        )
        flash(f"Saved: {said}.")
    else:
        flash("Nothing to save: every setting already had that value.")
    return back(room)


@bp.post("/rooms/<room>/status")
@login_required
def set_status(room: str) -> ResponseReturnValue:
    existing(room)
    status = request.form.get("status", "")
    if status not in STATUSES:
        return room_page(room, 400, {"status": "Choose open, paused or closed."})
    visits().set_status(room, status, who=who())
    flash(f"The room is {status} now.")
    return back(room)


@bp.post("/rooms/<room>/delete")
@login_required
def delete_room(room: str) -> ResponseReturnValue:
    if not visits().delete(room, who=who()):
        raise RoomNotFound(f"no room named {room!r}")
    flash(f"Deleted the room {room}, with its line, seats and audit log.")
    return redirect(url_for("admin.overview"), 303)


# -- people -------------------------------------------------------------------


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
    codes = [p.code for p in people_among(room, admission.tokens)]
    if admission.replay:
        again = f" ({', '.join(codes)})" if codes else ""
        flash(f"That form was already sent: nobody was admitted twice{again}.")
    elif admission.tokens:
        asked = "" if len(admission.tokens) == count else f" of the {count} asked for"
        flash(f"Admitted {len(admission.tokens)}{asked}: {', '.join(codes)}")
    else:
        flash(f"Nobody was admitted: {why_nobody(room)}", "error")
    return back(room)


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
    person = someone(room, code)
    if person is not None:
        visits().remove(room, person.token, who())
        done = "Removed {} from the line." if person.state == "waiting" else "Ended the seat of {}."
        flash(done.format(label(person)))
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


# -- the audit log ------------------------------------------------------------


@bp.get("/rooms/<room>/audit")
@login_required
def audit(room: str) -> ResponseReturnValue:
    if rooms().settings(room) is None:
        return missing(room)
    kind = request.args.get("kind", "")
    error = "" if not kind or kind in AUDIT_KINDS else "Choose a kind from the list."
    entries = [] if error else reports().audit(room, AUDIT_SHOWN, [kind] if kind else [])
    page = render_template(
        "admin/audit.html", room=room, entries=entries, kind=kind, kinds=AUDIT_KINDS, error=error
    )
    return page, 400 if error else 200


@bp.get("/rooms/<room>/audit.csv")
@login_required
def audit_export(room: str) -> ResponseReturnValue:
    if rooms().settings(room) is None:
        return missing(room)
    kinds = [k for k in request.args.getlist("kind") if k]
    return audit_csv(room, reports().audit(room, count=5000, kinds=kinds))


# -- helpers ------------------------------------------------------------------


@bp.errorhandler(RoomError)
def refused(error: RoomError) -> ResponseReturnValue:
    """The engine said no (the room is gone, the person left or is no longer waiting):
    nothing changed; say why on the page the admin came from."""
    room = (request.view_args or {}).get("room", "")
    if request.method == "GET":  # a page: nothing to go back to
        return missing(room) if isinstance(error, RoomNotFound) else error_response(400, str(error))
    message = str(error)
    flash(f"Nothing changed: {message[:1].upper()}{message[1:]}.", "error")
    if isinstance(error, RoomNotFound) or not room:
        return redirect(url_for("admin.overview"), 303)
    return back(room)


def existing(room: str) -> RoomSettings:
    settings = rooms().settings(room)
    if settings is None:
        raise RoomNotFound(f"no room named {room!r}")
    return settings


def back(room: str) -> ResponseReturnValue:
    """303 to the room's page, on the page of the line (or the search) the form was on."""
    page = whole_number(request.form.get("page", ""), 2, 10**7)
    query = request.form.get("q", "").strip()[:64] or None
    return redirect(url_for("admin.room", room=room, page=page, q=query), 303)


def someone(room: str, code: str) -> Person | None:
    """The person with this support code, or None with a flash saying they are gone."""
    person = reports().find(room, code)
    if person is None:
        existing(room)
        flash(
            f"Nothing changed: nobody with the support code {code[:12]} is here any more.", "error"
        )
    return person


def people_among(room: str, tokens: tuple[str, ...]) -> list[Person]:
    """The people just admitted, in admission order (seated now, or an offer claimed)."""
    seated = {p.token: p for p in reports().seated(room)}
    return [seated[token] for token in tokens if token in seated]


def why_nobody(room: str) -> str:
    summary = reports().summary(room)
    if summary is None or not summary.waiting:
        return "nobody is waiting in line."
    taken = "the one seat is" if summary.capacity == 1 else f"all {summary.capacity:,} seats are"
    return f"{taken} taken. Tick “Admit even if the room is full” to admit anyway."


def label(person: Person) -> str:
    """How the panel names a person: "Ann (AB12CD)", or just the code without a name."""
    return f"{person.name} ({person.code})" if person.name else person.code


def shown(name: str, value: Any) -> str:
    if value is None:
        return "no limit"
    return CHOICES.get(str(value), str(value))


def whole_number(text: str, low: int, high: int) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if low <= value <= high else None


def parse_settings(form: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Every setting in the form, checked against the table; an error per bad field."""
    values, errors = {}, {}
    for setting in SETTINGS:
        if setting.name not in form:
            continue
        try:
            values[setting.name] = setting.from_text(form[setting.name])
        except InvalidSetting:
            errors[setting.name] = bounds(setting)
    return values, errors


def bounds(setting: Setting) -> str:
    if setting.choices:
        allowed = " or ".join(CHOICES.get(c, c) for c in setting.choices)
        return f"{setting.label}: choose {allowed}."
    if setting.url:
        return f"{setting.label} must be an http:// or https:// address (or empty)."
    if setting.text:
        return f"{setting.label}: plain text of at most {setting.text} characters."
    empty = " (or leave it empty for no limit)" if setting.nullable else ""
    unit = f" {setting.unit}" if setting.unit else ""
    return (
        f"{setting.label} must be a whole number from {setting.low:,} to "
        f"{setting.high:,}{unit}{empty}."
    )


@bp.app_template_filter("duration")
def duration(seconds: float) -> str:
    """3 s, 4 min 05 s, 2 h 07 min, 3 d 4 h: a span of time, short."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


@bp.app_template_filter("utc")
def utc(at: float, seconds: bool = True) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%H:%M", time.gmtime(at))


@bp.app_template_filter("wait_at_back")
def wait_at_back(guess: Estimate | None) -> str:
    return "not measured yet" if guess is None else wait_words(guess, "open")


@bp.app_template_filter("audit_detail")
def audit_detail(entry: AuditEntry) -> str:
    """An entry's detail in words (the CSV keeps it as stored)."""
    if entry.kind == "move" and "->" in entry.detail:
        was, now = entry.detail.split("->", 1)
        return f"from place {was} to {now}"
    return DETAILS.get((entry.kind, entry.detail), entry.detail)


@bp.app_template_filter("percent")
def percent(share: float | None) -> str:
    return "no data" if share is None else f"{share * 100:.0f} %"
