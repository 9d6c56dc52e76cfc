"""A room's own waiting page in the panel (issue 30): its page template and image
origins edited on a page of their own, with the variables listed and a live preview
at a phone's width (390 px) and a desktop's (1280 px). A template that does not parse
is refused with a 400 that says where (``page_template.problem``)."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain import page_template
from webapp.domain.estimate import Estimate
from webapp.domain.settings import BY_NAME, InvalidSetting, RoomSettings
from webapp.views import reports, visits
from webapp.views.admin.auth import login_required
from webapp.views.admin.form import changes_in_words
from webapp.views.admin.panel import existing, panel_blueprint, who
from webapp.views.shared import own_page
from webapp.web.security import larger_body, page_policy

bp = panel_blueprint("admin_page", __name__)
NAMES = ("page_template", "page_asset_origins")
# The preview's visitor: number 42 of 180, about 12 minutes from the head
SAMPLE = {"position": 42, "waiting": 180, "wait": 720.0, "spread": 240.0, "poll": 10.0}


@bp.get("/rooms/<room>/page")
@login_required
def editor(room: str) -> ResponseReturnValue:
    settings = existing(room)
    return editor_page(room, settings, {name: getattr(settings, name) for name in NAMES})


@bp.post("/rooms/<room>/page")
@login_required
@larger_body
def save(room: str) -> ResponseReturnValue:
    """Both settings at once; a bad one refuses both, saying what and where."""
    settings = existing(room)
    typed = {name: request.form.get(name, "") for name in NAMES}
    values, errors = read(typed)
    if errors:
        return editor_page(room, settings, typed, errors, 400)
    was = settings.as_dict()
    changes = {name: value for name, value in values.items() if was[name] != value}
    if changes:
        visits().configure(room, changes, who=who())
        flash(f"Saved: {changes_in_words(was, changes)}.")
    else:
        flash("Nothing to save: the page already had that template and those origins.")
    return redirect(url_for("admin_page.editor", room=room), 303)


@bp.route("/rooms/<room>/page/preview", methods=["GET", "POST"])
@login_required
@larger_body
def preview(room: str) -> ResponseReturnValue:
    """The waiting page with sample figures: the saved template (GET) or the one being
    typed (POST, from the editor), framed by the editor alone."""
    settings = existing(room)
    if request.method == "POST":
        typed = {name: request.form.get(name, "") for name in NAMES}
        values, errors = read(typed)
        if errors:
            return framed(render_template("admin/page_preview.html", room=room, errors=errors))
        settings = RoomSettings(**{**settings.as_dict(), **values})
    context: dict[str, Any] = {"room": room, "you": "preview", "email": None, "drop": None,
                               "site": settings.site_url, "refresh": SAMPLE["poll"]}  # fmt: skip
    body = own_page.body(settings.page_template, sample(room, settings), **context)
    placed = page_template.names_controls(settings.page_template)
    html = render_template(
        "admin/page_preview.html", own=body, own_controls=placed, errors={}, **context
    )
    return framed(html, own_page.room_policy(settings))


def framed(html: str, policy: str | None = None) -> ResponseReturnValue:
    """A preview, which the editor's frames alone may show (the room's policy else)."""
    policy = (policy or page_policy()).replace("frame-ancestors 'none'", "frame-ancestors 'self'")
    headers = {"Content-Security-Policy": policy, "X-Frame-Options": "SAMEORIGIN",
               "Cache-Control": "no-store"}  # fmt: skip
    return html, 200, headers


def read(typed: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    values, errors = {}, {}
    for name in NAMES:
        try:
            values[name] = BY_NAME[name].from_text(typed[name])
        except InvalidSetting as error:
            errors[name] = f"{BY_NAME[name].label}: {str(error).removeprefix(name + ' ')}"
    return values, errors


def sample(room: str, settings: RoomSettings) -> dict[str, page_template.Value]:
    """Every variable, as a visitor far back in a busy line would see it."""
    return own_page.figures(
        title=settings.title or room,
        position=int(SAMPLE["position"]),
        waiting=int(SAMPLE["waiting"]),
        status="open",
        guess=Estimate(SAMPLE["wait"], SAMPLE["spread"] ** 2),
        poll=SAMPLE["poll"],
        now=reports().now(),
        support_code="K7Q2XM",
        settings=settings,
        next_url=settings.site_url,
    )


def editor_page(
    room: str,
    settings: RoomSettings,
    typed: dict[str, str],
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> ResponseReturnValue:
    context = {
        "room": room,
        "settings": settings,
        "typed": typed,
        "errors": errors or {},
        "variables": page_template.VARIABLES,
        "limit": page_template.MAX_BYTES,
    }
    return render_template("admin/page.html", **context), status
