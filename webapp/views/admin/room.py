"""A room's page in the panel, assembled for its kind: a live room's line, offers, seats,
wait estimates and charts; a waitlist's own figures (entries, confirmed, admitted,
claimed, lapsed), its emails, held referrals and draw. Both have the settings form of
their kind, the notice and the admit form. The views that show it are in ``admin``;
the actions that re-render it after bad input call ``room_page`` too."""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import Any

from flask import render_template
from flask.typing import ResponseReturnValue

from webapp.domain.reports import PAGE, Person
from webapp.domain.settings import KINDS
from webapp.domain.site_keys import NewSiteKey
from webapp.views import reports, site_keys, waitlists
from webapp.views.admin.charts import accuracy, history_charts
from webapp.views.admin.form import fields, posted_fields
from webapp.views.admin.panel import missing, zone
from webapp.views.admin.words import HELD_WHY
from webapp.views.shared.drops import panel_figures

SEATED_SHOWN = 200  # seats listed on a room's page (search finds the others)


def room_page(
    room: str,
    status: int = 200,
    errors: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
    page: int = 1,
    query: str = "",
    typed: bool = False,
    made_key: NewSiteKey | None = None,
) -> ResponseReturnValue:
    """The room's page; after bad input, ``errors`` by field and the ``form`` as sent
    (``typed``: it was the settings form, shown again as typed); ``made_key``: a site
    key just made, shown this once."""
    settings = reports().find_settings(room)
    summary = reports().summary(room)
    if settings is None or summary is None:
        return missing(room)
    now = reports().now()
    form = form or {}
    context = {
        "room": room,
        "settings": settings,
        "summary": summary,
        "now": now,
        "errors": errors or {},
        "values": form,
        "fields": posted_fields(form, zone()) if typed else fields(settings.as_dict(), zone()),
        "kind_shown": form.get("kind") if typed and form.get("kind") in KINDS else settings.kind,
        "request_id": secrets.token_urlsafe(16),
        "charts": history_charts(room, now, settings.kind, zone()),
        "site_keys": site_keys().live(room) if settings.site_url else [],
        "made_key": made_key,
    }
    if settings.kind == "waitlist":
        context.update(waitlist_context(room))
    else:
        context.update(live_context(room, summary.waiting, page, query, now))
    headers = {"Cache-Control": "no-store"} if made_key else {}
    return render_template("admin/room.html", **context), status, headers


def live_context(room: str, waiting: int, page: int, query: str, now: float) -> dict[str, Any]:
    """A live room's line, the seats offered and taken, and how its estimates fare."""
    held = reports().seated(room)
    seated = [p for p in held if p.state != "offered"]
    rates = reports().cache.rates(room, now)
    return {
        **line_context(room, page, query, now),
        "back": reports().back_of_line(room, waiting),
        "basis": None if rates is None else rates.basis,
        "rates": rates,
        "overdue": reports().overdue(room, now),
        "offered": [p for p in held if p.state == "offered"],
        "seated": seated[:SEATED_SHOWN],
        "seated_total": len(seated),
        "accuracy": accuracy(room, now),
        **panel_figures(room, reports().settings(room)),  # a scheduled drop's
    }


def waitlist_context(room: str) -> dict[str, Any]:
    """A waitlist's figures, its held referral boosts and its lottery's draw (the
    waitlist's own actions are in ``admin_waitlist``)."""
    return {"figures": waitlists().figures(room), "held": waitlists().held(room),
            "draw": waitlists().draw_record(room), "why": HELD_WHY,
            "mail": waitlists().mail_figures(room)}  # fmt: skip


def line_context(room: str, page: int, query: str, now: float | None = None) -> dict[str, Any]:
    """A page of the line (50 people), or the people matching ``query``."""
    now = reports().now() if now is None else now
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


def people_among(room: str, tokens: tuple[str, ...]) -> list[Person]:
    """The people just admitted, in admission order (seated now, or an offer claimed)."""
    seated = {p.token: p for p in reports().seated(room)}
    return [seated[token] for token in tokens if token in seated]
