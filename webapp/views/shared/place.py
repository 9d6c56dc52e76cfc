"""How a visitor's place is shown, on every page that shows it: the card that offers to
join, the waiting page (whole, or its polled part for htmx), the "it's your turn"
moment, the room page and the ended state. No routes here: ``pages`` (the room's own
page), ``line`` (the waiting page's poll, leaving, the email) and ``move`` render
through these.

Nothing here joins. A seat's page holds the seat through ``Visits.enter``: a page
without a socket (no JavaScript) reloads every ``seat_refresh`` seconds and its seat is
held for the room's grace period plus that, so a closed tab frees it as soon as a
closed socket would, give or take one reload.
"""

from __future__ import annotations

import functools
import zlib
from typing import Any

from flask import Response, current_app, make_response, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain import page_template
from webapp.domain.chat import MAX_TEXT
from webapp.domain.lobby import Standing
from webapp.domain.rooms import RoomNotFound, TicketGone, TicketNotFound, public_id
from webapp.domain.settings import RoomSettings
from webapp.domain.visits import Place
from webapp.live.realtime import room_state
from webapp.views import admission, chats, reports, services, visits
from webapp.views.shared import own_page, passes, session
from webapp.views.shared.words import (
    chance_words,
    moved_words,
    progress_words,
    stock_words,
    trend_words,
    wait_words,
)
from webapp.web.i18n import current_language
from webapp.web.replies import DropView, drop_view

CLOSE_TOO_MANY = 4008  # a room socket's close code: over WEBAPP_MAX_CONNECTIONS_PER_USER
CLOSE_TRY_AGAIN = 1013  # a room socket's close code: Redis is unavailable; reconnect later
SEATED = ("offered", "admitted")
SEAT_ENDINGS = ("grace", "session", "unclaimed", "released")  # reasons only a seat ends for
TURN_MOMENT = 3  # seconds "it's your turn" shows before the page goes in (waiting.js too)
NO_SCRIPT_POLL = 5.0  # a page without JavaScript reloads itself no more often than this
MAX_SEAT_REFRESH = 30.0  # ... and a room page without it at least this often
WAITING_CONFIG = {"turnMoment": TURN_MOMENT}  # static/js/waiting.js reads it (js-config)
LINE_TEMPLATES = ("_line_status.html", "_drop_stock.html")  # a waiting place's part
SHAPE_HEADER = "X-Line-Shape"  # a poll of the waiting page: the shape it shows


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def seat_refresh(settings: RoomSettings) -> float:
    """How often a room page without JavaScript reloads to hold its seat: the grace a
    closed socket gets, within 5 to 30 seconds."""
    return min(max(float(settings.grace_seconds), NO_SCRIPT_POLL), MAX_SEAT_REFRESH)


def show(room: str, token: str) -> ResponseReturnValue:
    """The page of a live ticket, on a full visit: the room (an offered seat is taken
    here) or the waiting page. Never joins."""
    if (gone := moved_away(room, token)) is not None:
        return gone
    state = reports().ticket_state(room, token)
    if state in SEATED:
        return room_page(room, token, claims=state == "offered")
    found = visits().place(room, token, shown=session.shown(room))
    if found.ended is not None:
        return ended_page(room, mark(room, token, found.ended.why), here=False)
    if found.standing is None:  # the check-in took a seat offered meanwhile
        return room_page(room, token, claims=True)
    return waiting_page(room, found.standing)


def poll(room: str, token: str) -> ResponseReturnValue:
    """The waiting page's check-in (htmx), or its reload without JavaScript."""
    # htmx's poll carries the figure it shows in its URL, so a poll leaves the session
    # (and its cookie) as it is; a reload without JavaScript reads it from the session
    shown = (request.args.get("shown") if is_htmx() else None) or session.shown(room)
    found = visits().page_place(room, token, session.holder(room), shown=shown)
    if found.state == "moved":
        session.forget_moved(room, token)
        return moved_page(room, token)
    if found.ended is not None:
        return ended_page(room, mark(room, token, found.ended.why), here=False)
    if found.standing is None:  # a seat is offered or held: it is this visitor's turn
        # htmx shows the moment, then goes in; a page without JavaScript goes in at once
        # (its reloads are 5 s apart: the offer may not outlast one more), as does a
        # site room's page: its visitor is sent on to the site without a pause
        if is_htmx() and not reports().settings(room).site_url:
            return turn_page(room, token, found)
        return to_gate(room)
    return waiting_page(room, found.standing)


def mark(room: str, token: str, why: str) -> session.EndedMark:
    seat = why in SEAT_ENDINGS or request.args.get("seat") == "1"
    return session.mark_ended(room, token, why, seat)


def moved_away(room: str, token: str) -> ResponseReturnValue | None:
    """The "moved" state for a page of a browser whose place went to another one."""
    if not session.gave_away(room, token):
        return None
    return moved_page(room, token)


def moved_page(room: str, token: str) -> ResponseReturnValue:
    return ended_page(room, session.EndedMark(public_id(token), "moved", False), here=False)


def room_page(room: str, token: str, claims: bool) -> ResponseReturnValue:
    settings = reports().settings(room)
    if settings.site_url:  # a site room: the seat is a pass for the site
        return site_page(room, token, settings.site_url)
    refresh = seat_refresh(settings)
    try:
        ticket = visits().enter(room, token, settings.grace_seconds + refresh, claims=claims)
    except TicketGone as gone:
        return ended_page(room, session.mark_ended(room, token, gone.why, True), here=False)
    except (TicketNotFound, RoomNotFound):
        return ended_page(room, session.mark_ended(room, token, "unknown", True), here=False)
    context = {
        "room": room,
        "state": room_state(reports(), room),
        "welcome": session.welcomed(room),
        "refresh": refresh,
        "you": public_id(token),
        "support_code": ticket.support_code,
        "js_config": room_config(),
    }
    return render_template("room.html", **context)


def site_page(room: str, token: str, site_url: str) -> ResponseReturnValue:
    """A site room's seat: the seat is held (an offered one taken), and the visitor goes
    to the page the gate sent them from (``next``), on the site, with a fresh pass."""
    try:
        visits().renew(room, token)
    except TicketGone as gone:
        return ended_page(room, session.mark_ended(room, token, gone.why, True), here=False)
    except (TicketNotFound, RoomNotFound):
        return ended_page(room, session.mark_ended(room, token, "unknown", True), here=False)
    response = redirect(passes.site_target(site_url, passes.kept_next(room)), 303)
    passes.give_pass(response, room, token)
    response.headers["Cache-Control"] = "no-store"
    return response


def room_config() -> dict[str, Any]:
    """What static/js/room.js and chat.js must agree on with the server (read from
    base.html's js-config block, as the words are from js-strings)."""
    chat = chats()
    return {
        "closeTooMany": CLOSE_TOO_MANY,
        "closeTryAgain": CLOSE_TRY_AGAIN,
        "maxText": MAX_TEXT,
        "rateLimit": chat.rate_limit,
        "rateWindow": chat.rate_window,
    }


def waiting_page(room: str, standing: Standing) -> ResponseReturnValue:
    polled = is_htmx()
    shown = standing.shown.dumps() if standing.shown else None
    if not polled:  # a poll carries it in its URL instead (``poll``)
        session.keep_shown(room, shown)
    page = "_line_status.html" if polled else "waiting.html"
    context = line_context(
        room,
        standing,
        polled=polled,
        seen=request.args.get("seen", type=int),
        start=session.start(room, standing.ticket.position),
        email=session.email(room),
    )
    if polled and request.headers.get(SHAPE_HEADER) == context["shape"]:
        response = no_store(line_update(context))  # the page's shape holds: its figures
        response.vary.add("Accept-Language")  # the figures' words are in the page's
        response.vary.add(SHAPE_HEADER)
        return response
    return no_store(render_template(page, **context))


def turn_page(room: str, token: str, found: Place) -> ResponseReturnValue:
    """ "It's your turn": the waiting page's polled part (htmx), which goes in."""
    session.welcome(room)
    context = {"room": room, "turn": found, "you": public_id(token), "polled": is_htmx()}
    return no_store(render_template("_line_status.html", **context))


def ended_page(room: str, ended: session.EndedMark, here: bool) -> ResponseReturnValue:
    """The ended state: the partial alone for htmx (200, so it is swapped in and stops
    the polling), else the whole page with 410 (404 when the room is gone). ``here``:
    this page shows it on a visit of its own (not a live page learning it), so a
    "left" says "you left", not "in another tab". The room's own page exists whatever
    became of the place, so it answers 200; an old poll or bookmark of the place's
    line (``line.status``) is gone: 410."""
    found = reports().ended(room, ended.why)
    seat = ended.seat or request.args.get("seat") == "1"
    polled = is_htmx()
    context = {"room": room, "ended": found, "seat": seat, "here": here and not polled,
               "polled": polled}  # fmt: skip
    if polled:
        return render_template("_line_status.html", **context), 200
    page = render_template("waiting.html", **context)
    if not found.exists:
        return no_store(page), 404
    return no_store(page), 200 if request.endpoint == "pages.room_page" else 410


def join_card(
    room: str, status: int = 200, error: str = "", join_now: bool = False
) -> ResponseReturnValue:
    """The room's own page for someone without a place in it: what it is, how full,
    how long a joiner waits, and one button that joins (a POST: only that joins).
    ``join_now``: a site room's gate sent the visitor and the room asks for a puzzle:
    the page solves it and joins by itself (static/js/challenge.js)."""
    settings = reports().settings(room)
    summary = reports().summary(room)
    if summary is None:
        raise RoomNotFound(f"no room named {room!r}")
    drop = drop_view(services(), room, settings)
    method = settings.queueing_method
    enters = summary.status == "open" and not summary.waiting and summary.active < summary.capacity
    enters = enters or (method == "passthrough" and summary.status == "open")
    enters = enters and (drop is None or drop.phase == "open")
    enters = enters and method != "reject"
    # before a drop's start nobody has a place to wait from: the draw at the start gives
    # each their place (the page counts down to it instead)
    drawn_later = drop is not None and drop.phase in ("before", "prequeue")
    quiet = enters or drawn_later
    guess = None if quiet or method != "fifo" else reports().back_of_line(room, summary.waiting)
    # Full, with nobody waiting: a seat offered to someone who has not taken it yet is
    # why a joiner waits; say so, and for how long at most (issue 35)
    offered = None
    if not enters and not summary.waiting and summary.status == "open":
        offers = reports().offers(room)
        if offers.ends is not None:
            offered = max(round(offers.ends - reports().now()), 1)
    context = {
        "room": room,
        "settings": settings,
        "summary": summary,
        "enters": enters,
        "wait": None if guess is None else wait_words(guess, summary.status),
        "basis": reports().basis(room),
        "name": request.form.get("name", session.name()),
        "error": error,
        "challenge": summary.status != "closed" and admission().asks_puzzle(room),
        "drop": drop,
        # the room takes only its site's vouched-for customers, and none came with one
        "from_site": settings.identity == "required" and session.customer(room) is None,
        "offered": offered,
        "join_now": join_now,
        "rejecting": method == "reject",  # new joins are turned away (503)
        "chance": None
        if quiet
        else chance_words(reports().chance_at_back(room, summary.waiting), True),
    }
    return no_store(render_template("join.html", **context)), status


def to_gate(room: str) -> ResponseReturnValue:
    """To the room's page: a full navigation, also when htmx asked."""
    url = url_for("pages.room_page", room=room)
    if is_htmx():
        response = make_response("", 200)
        response.headers["HX-Redirect"] = url
        return response
    return redirect(url), 303


def no_store(page: str | dict[str, Any]) -> Response:
    """A live page is never kept for Back: the browser asks again, and is shown what is
    true now (the ended state after leaving, never the old place)."""
    response = make_response(page)
    response.headers["Cache-Control"] = "no-store"
    return response


def line_context(
    room: str, standing: Standing, *, polled: bool, seen: int | None, start: int, email: str
) -> dict[str, Any]:
    """What the waiting page (or its polled part: ``polled``) shows of a place in line.
    Reads no request and no session (the lean poll renders it outside Flask: its
    ``webapp.views.visitor.lean_poll``): ``seen`` is the place the page showed before,
    ``start`` where the place joined, ``email`` the address the visitor gave."""
    ticket = standing.ticket
    shown = standing.shown.dumps() if standing.shown else None
    guess = standing.estimate
    settings = reports().settings(room)
    poor = guess is not None and reports().cache.hard_to_predict(room, reports().now())
    # a screen reader hears a place that moved (not under random order: there is none)
    moved = seen is not None and seen != ticket.position and standing.method != "random"
    context: dict[str, Any] = {
        "room": room,
        "ticket": ticket,
        "you": public_id(ticket.token),
        "shown": shown,  # the figure shown, for the next poll's URL
        "seconds": None if guess is None else round(guess.wait),
        "basis": standing.basis,
        "typical": settings.typical_stay_seconds,
        "poll": standing.poll_after,
        "refresh": max(standing.poll_after, NO_SCRIPT_POLL),
        "announce": moved_words(ticket.position, ticket.ahead) if moved else "",
        "start": start,
        "email": email,
        "polled": polled,
        "js_config": WAITING_CONFIG,
        "drop": drop_view(services(), room, settings, ticket),
        "site": settings.site_url,  # a site room: the turn leads to the site
        "method": standing.method,  # random: a chance, not a place; passthrough: going in
    }
    if settings.page_template:  # the room's own page (issue 30)
        context["own"] = own_body(room, standing, settings, context)
        context["own_controls"] = page_template.names_controls(settings.page_template)
    context["figures"] = line_figures(standing, start, context["drop"], poor)
    context["shape"] = line_shape(context)
    return context


def line_figures(
    standing: Standing, start: int, drop: DropView | None, poor: bool
) -> dict[str, str]:
    """What a poll changes on a waiting page whose shape it keeps (``line_shape``): the
    text of each ``data-figure`` element of ``_line_status.html`` (``data-figure-value``:
    a progress bar's value), as the template prints it and ``waiting.js`` sets it. The
    wait's words follow how right the room's estimates have been lately (``poor``)."""
    ticket, guess = standing.ticket, standing.estimate
    outlook = drop.outlook if drop is not None else None
    stock = outlook.stock_left if outlook is not None else None
    return {
        "position": str(ticket.position),
        "ahead": str(ticket.ahead),
        "seats": f"{ticket.active} / {ticket.capacity}",
        "in-line": str(ticket.waiting),
        "progress": str(start - ticket.position),
        "progress-text": progress_words(start, ticket.position) if start > 1 else "",
        "wait": "" if guess is None else wait_words(guess, poor=poor),
        "trend": trend_words(standing.trend) or "",
        "chance": chance_words(standing.chance) or "",
        "stock": "" if stock is None else stock_words(stock),
    }


def line_shape(context: dict[str, Any]) -> str:
    """A short name for everything of a waiting place's part (``_line_status.html``)
    that is not a figure (``line_figures``): which parts show, their fixed words, the
    language, the template itself. Two answers of one shape differ only in figures,
    so a poll that finds the page's shape answers them alone, as JSON
    (``lean_poll``); a test holds the template to it."""
    ticket, drop, figures = context["ticket"], context["drop"], context["figures"]
    outlook = drop.outlook if drop is not None else None
    drop_parts = None
    if drop is not None:
        share = None if outlook is None else round(outlook.served_share * 100)
        sold_out = outlook is not None and outlook.likely_sold_out
        drop_parts = (drop.phase, drop.in_prequeue, drop.drawn, drop.draw_id, sold_out, share)
    parts = (
        template_version(),
        current_language(),
        context["room"],
        context["you"],
        ticket.room_status,
        ticket.support_code,
        context["method"],
        context["start"],
        context["basis"],
        context["typical"],
        context["seconds"] is None,
        context.get("own"),  # a room's own page: its figures are in its text
        drop_parts,
        tuple(name for name, text in figures.items() if text),  # which ones show
    )
    return format(zlib.crc32(repr(parts).encode()), "08x")


def line_update(context: dict[str, Any]) -> dict[str, Any]:
    """A poll's answer to a waiting page whose shape holds (``line_shape``): its
    figures, and what else the page takes from a poll (``static/js/waiting.js``): when
    to ask again and with what (``seen``, ``shown``), the title's place, the wait for
    the clock time, the organisers' notice, what a screen reader hears."""
    ticket = context["ticket"]
    return {
        "shape": context["shape"],
        "figures": context["figures"],
        "poll": context["poll"],
        "seen": ticket.position,
        "shown": context["shown"],
        "position": None if context["method"] == "random" else ticket.position,
        "wait": context["seconds"],
        "notice": ticket.notice or "",
        "announce": context["announce"],
    }


@functools.cache
def template_version() -> str:
    """The waiting place's templates as they are (a page opened before a deploy that
    changed them has another shape: its next poll redraws it)."""
    env = current_app.jinja_env
    assert env.loader is not None
    sources = "".join(env.loader.get_source(env, name)[0] for name in LINE_TEMPLATES)
    return format(zlib.crc32(sources.encode()), "08x")


def own_body(room: str, standing: Standing, settings: RoomSettings, context: dict[str, Any]) -> str:
    """The room's page template with this visitor's figures (and controls)."""
    ticket, drop = standing.ticket, context["drop"]
    commitment = ""
    if drop is not None and drop.prequeue_at is not None:
        commitment = visits().drops.draw(room).commitment
    next_url = ""
    if settings.site_url:
        next_url = passes.site_target(settings.site_url, passes.kept_next(room))
    values = own_page.figures(
        title=settings.title or room,
        position=ticket.position,
        waiting=ticket.waiting,
        status=ticket.room_status,
        guess=standing.estimate,
        poll=standing.poll_after,
        now=ticket.now,
        support_code=ticket.support_code,
        settings=settings,
        drop=drop,
        commitment=commitment,
        next_url=next_url,
    )
    return own_page.body(settings.page_template, values, **context)
