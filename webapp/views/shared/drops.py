"""A scheduled drop on the visitor's side (issue 24): what a room's page, a waiting page
and the JSON API say of its schedule, its pre-queue and its stock; the draw's public
record (``/rooms/<room>/draw``, ``.txt``, ``/api/rooms/<room>/draw``). The answers to a
join before the pre-queue (409 ``not_open_yet``) and after a sell-out (410 ``sold_out``)
are the room page's (``webapp.views.visitor.pages``). The domain is ``webapp.domain.drops``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from flask import abort, render_template
from flask.typing import ResponseReturnValue

from webapp.domain.draw import commitment_of, verify_draw
from webapp.domain.drops import DrawRecord, Outlook, has_schedule, phase_at
from webapp.domain.refusals import RoomNotFound
from webapp.domain.settings import RoomSettings, iso_text
from webapp.domain.tickets import Ticket, public_id
from webapp.services import Services
from webapp.views import lobby, services, visits
from webapp.views.shared import session

DRAW_SHOWN = 10_000  # draw ids listed on the draw page (draw.txt lists them all)


class DropView(NamedTuple):
    """What a page says of a room's drop."""

    phase: str  # before | prequeue | open | ended | sold_out
    prequeue_at: int | None
    starts_at: int | None
    ends_at: int | None
    prequeued: int  # how many wait in the pre-queue
    drawn: bool  # the start's draw was held
    outlook: Outlook | None  # the stock, when tracked
    draw_id: str  # the ticket's draw id ('' without a ticket)
    in_prequeue: bool  # the ticket waits in the pre-queue (no place yet)

    @property
    def joinable(self) -> bool:
        return self.phase in ("prequeue", "open")


def applies(settings: RoomSettings) -> bool:
    return settings.kind == "live" and (has_schedule(settings) or settings.stock is not None)


def drop_view(
    room: str, settings: RoomSettings, ticket: Ticket | None = None, built: Services | None = None
) -> DropView | None:
    """The drop as a page shows it (None: the room has no schedule and no stock). Reads
    no request: given the services (``built``), it answers outside Flask too."""
    if not applies(settings):
        return None
    built = built or services()
    drops = built.visits.drops
    state = drops.state(room)
    phase = phase_at(settings, built.lobby.now(), state)
    in_prequeue = ticket is not None and ticket.state == "waiting" and ticket.position == 0
    # (a start placing the pre-queue has some of it still to place: they see it)
    prequeued = drops.prequeued(room) if phase == "prequeue" or in_prequeue else 0
    outlook = None
    if settings.stock is not None:
        ahead, waiting = (0, prequeued) if in_prequeue else (0, 0)
        if ticket is not None and not in_prequeue:
            ahead, waiting = ticket.ahead, ticket.waiting
        elif ticket is None:
            ahead = waiting = prequeued if phase == "prequeue" else 0
        outlook = drops.outlook(room, ahead, waiting)
        if outlook.stock_left is not None and outlook.stock_left <= 0:
            phase = "sold_out"
    return DropView(
        phase=phase,
        prequeue_at=settings.prequeue_at,
        starts_at=settings.starts_at,
        ends_at=settings.ends_at,
        prequeued=prequeued,
        drawn=state == "drawn",
        outlook=outlook,
        draw_id=public_id(ticket.token) if ticket is not None and settings.starts_at else "",
        in_prequeue=in_prequeue,
    )


def panel_figures(room: str, settings: RoomSettings) -> dict[str, Any]:
    """What the panel's room page shows of its drop (admin/_drop.html): where its
    schedule is, the draw, the pre-queue, the stock and units sold per admission."""
    if settings.kind != "live":
        return {"drop": None}
    drops = visits().drops
    record = drops.draw(room)
    left, sold, admissions = drops.stock(room)
    phase = phase_at(settings, lobby().now(), record.state)
    return {
        "drop": {
            "phase": "sold out" if left is not None and left <= 0 else phase,
            "record": record,
            "prequeued": drops.prequeued(room),
            "left": left,
            "sold": sold,
            "admissions": admissions,
            "per_admission": drops.outlook(room, 0, 0).per_admission,
        }
    }


def standing_fields(built: Services, room: str, ticket: Ticket) -> dict[str, Any]:
    """What a join or position reply of the JSON API adds for a drop: the status
    ``prequeue`` (no position yet, the start time, how many are in the pre-queue),
    the draw id, the stock left and whether it likely sells out before this turn."""
    drop = drop_view(room, built.lobby.settings(room), ticket, built)
    if drop is None:
        return {}
    fields: dict[str, Any] = {"stock_left": None, "likely_sold_out": False}
    if drop.starts_at is not None:
        fields.update(draw_id=drop.draw_id, starts_at=iso_text(drop.starts_at))
    if drop.in_prequeue:  # no place yet, so no wait to estimate
        fields.update(status="prequeue", position=None, ahead=None, prequeue=drop.prequeued)
        fields.update(wait=None, variance=None, range=None, trend=None, basis=None)
    if drop.phase == "sold_out":
        fields["room_status"] = "sold_out"
    if drop.outlook is not None:
        fields.update(
            stock_left=drop.outlook.stock_left,
            likely_sold_out=drop.outlook.likely_sold_out,
            served_share=round(drop.outlook.served_share, 3),
        )
    return fields


def room_status(room: str, status: str) -> str:
    """A room's status as the API lists it: sold_out once its stock is gone (from the
    cached settings: a stock report changes their version)."""
    try:
        stock = lobby().settings(room).stock
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
