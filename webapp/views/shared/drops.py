"""A scheduled drop on the visitor's side (issue 24): what a room's page, a waiting page
and the JSON API say of its schedule, its pre-queue and its stock; the draw's public
record (``/rooms/<room>/draw``, ``.txt``, ``/api/rooms/<room>/draw``). The answers to a
join before the pre-queue (409 ``not_open_yet``) and after a sell-out (410 ``sold_out``)
are the room page's (``webapp.views.visitor.pages``). The domain is ``webapp.domain.drops``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flask import abort, render_template
from flask.typing import ResponseReturnValue

from webapp.domain.draw import commitment_of, verify_draw
from webapp.domain.drops import DrawRecord, phase_at
from webapp.domain.refusals import RoomNotFound
from webapp.domain.settings import RoomSettings, iso_text
from webapp.domain.tickets import public_id
from webapp.views import reports, visits
from webapp.views.shared import session
from webapp.web.replies import applies

DRAW_SHOWN = 10_000  # draw ids listed on the draw page (draw.txt lists them all)


def panel_figures(room: str, settings: RoomSettings) -> dict[str, Any]:
    """What the panel's room page shows of its drop (admin/_drop.html): where its
    schedule is, the draw, the pre-queue, the stock and units sold per admission; none
    for a room without a schedule or stock."""
    if not applies(settings):
        return {"drop": None}
    drops = visits().drops
    record = drops.draw(room)
    left, sold, admissions = drops.stock(room)
    phase = phase_at(settings, reports().now(), record.state)
    return {
        "drop": {
            "phase": "sold_out" if left is not None and left <= 0 else phase,
            "record": record,
            "prequeued": drops.prequeued(room),
            "left": left,
            "sold": sold,
            "admissions": admissions,
            "per_admission": drops.outlook(room, 0, 0).per_admission,
        }
    }


def room_status(room: str, status: str) -> str:
    """A room's status as the API lists it: sold_out once its stock is gone (from the
    cached settings: a stock report changes their version)."""
    try:
        stock = reports().settings(room).stock
    except RoomNotFound:
        return status
    return "sold_out" if stock is not None and stock <= 0 else status


def draw_json(room: str) -> dict[str, Any]:
    record = visits().drops.draw(room)
    return {
        "state": record.state or "none",
        "commitment": record.commitment,
        "seed": record.seed,
        "entries": record.entries,
        "starts_at": iso_text(record.starts_at),
        "drawn_at": iso_text(int(record.drawn_at)) if record.drawn_at else None,
    }


def draw_page(room: str) -> ResponseReturnValue:
    """A live room's draw in the open: the commitment, the seed once revealed, the draw
    ids in drawn order, the recipe, and this visitor's own draw id."""
    record: DrawRecord = visits().drops.draw(room)
    order = visits().drops.drawn_ids(room, DRAW_SHOWN) if record.state == "drawn" else []
    token = session.tickets().get(room)
    mine = public_id(token) if token else ""
    honest = bool(record.seed) and commitment_of(record.seed) == record.commitment
    recomputed = record.state == "drawn" and record.entries <= DRAW_SHOWN
    agrees = recomputed and verify_draw(record.seed, order) == order
    return render_template("drop_draw.html", room=room, record=record, order=order,
                           mine=mine, honest=honest, agrees=agrees)  # fmt: skip


def draw_text(room: str) -> ResponseReturnValue:
    """Every draw id of a held draw, one a line, in drawn order (404 before the draw)."""
    if visits().drops.draw(room).state != "drawn":
        abort(404)
    ids = visits().drops.drawn_ids(room)

    def lines() -> Iterator[str]:
        for at in range(0, len(ids), 1000):
            yield "".join(f"{i}\n" for i in ids[at : at + 1000])

    return lines(), 200, {"Content-Type": "text/plain; charset=utf-8"}
