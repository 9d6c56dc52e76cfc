"""Continue on another device: the waiting page offers a link (and its QR code); opening
it in another browser, and confirming, moves the place there (webapp.domain.moves).

The link is confirmed with a POST so that a chat app's link preview cannot take it.
The browser that gave the place away learns it at its next poll or visit.
"""

from __future__ import annotations

import segno
from flask import Blueprint, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from markupsafe import Markup

from webapp.domain.moves import LIFETIME, MoveRefused
from webapp.domain.tickets import LIVE
from webapp.views import moves, reports
from webapp.views.shared import session

bp = Blueprint("move", __name__)
OFFERED = ("waiting", "offered")  # the waiting page offers it; a seat stays where it is
REFUSED = {"expired": 410, "used": 410, "ended": 410, "invalid": 400}


@bp.get("/rooms/<room>/move")
def offer(room: str) -> ResponseReturnValue:
    token = session.ticket(room)
    if token is None or reports().ticket_state(room, token) not in OFFERED:
        return render_template("move.html", room=room, refused="ended"), 410
    link = url_for(".take", link=moves().offer(room, token, session.visitor_id()), _external=True)
    qr = segno.make(link, error="m").svg_inline(scale=4, dark="#000", light="#fff", border=2)
    minutes = LIFETIME // 60
    return render_template("move.html", room=room, link=link, qr=Markup(qr), minutes=minutes)


@bp.get("/move/<link>")
def confirm(link: str) -> ResponseReturnValue:
    try:
        room = moves().peek(link)[0]
    except MoveRefused as refused:
        return render_template("move.html", refused=refused.reason), REFUSED[refused.reason]
    return render_template("move.html", room=room, confirm=link)


@bp.post("/move/<link>")
def take(link: str) -> ResponseReturnValue:
    try:
        room, token, _, _ = moves().peek(link)
        if reports().ticket_state(room, token) not in LIVE:
            raise MoveRefused("ended")
        moved = moves().take(link)
    except MoveRefused as refused:
        return render_template("move.html", refused=refused.reason), REFUSED[refused.reason]
    # The one place named: never the giver's visitor id, which holds their other places
    session.hold(room, moved.holder)
    session.remember(room, token)
    return redirect(url_for("pages.room_page", room=room)), 303
