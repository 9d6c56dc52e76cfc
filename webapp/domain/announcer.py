"""How the domain tells a room's open pages, in every process, that something changed.

``Visits`` announces every change it makes (a join, an end, an admission, a room's
settings). Any room script also does upkeep first (dropouts, lapsed seats, offers to
the head of the line), so a check-in or a socket's beat can change a room's figures as a
side effect; ``saw`` compares the figures a script answered with against the last this
process saw of the room and announces a difference. The publisher (``RoomRelay``)
throttles what it sends, and never drops the last of a burst. No Flask here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol

from webapp.domain.tickets import Ticket, public_id

RENAMED = "member.renamed"
ENDED = "ticket.ended"  # a ticket ended: its own sockets say why and close
DELETED = "room.deleted"  # the room is gone: every socket says so and closes
REMEMBERED = 1024  # rooms whose last figures a process keeps

Figures = tuple[int, int, int, str, str]  # waiting, active, capacity, status, notice


class Publisher(Protocol):
    """Tells a room's open sockets in every process (``webapp.live.realtime.RoomRelay``)."""

    def changed(self, room: str) -> None: ...

    def publish(self, room: str, frame: Mapping[str, Any]) -> None: ...


def renamed_frame(token: str, name: str) -> dict[str, Any]:
    """Tells a room's sockets that the holder of ``token`` is now called ``name``."""
    return {"type": RENAMED, "id": public_id(token), "name": name}


def ended_frame(token: str, why: str) -> dict[str, Any]:
    """Tells a room's sockets that the ticket ``token`` ended (only its holder's act)."""
    return {"type": ENDED, "id": public_id(token), "why": why}


def deleted_frame() -> dict[str, Any]:
    return {"type": DELETED}


class Announcer:
    """Thread-safe: one per process."""

    def __init__(self, publisher: Publisher, remembered: int = REMEMBERED) -> None:
        self.publisher = publisher
        self.remembered = remembered
        self._seen: OrderedDict[str, Figures] = OrderedDict()
        self._lock = threading.Lock()

    def changed(self, room: str, ticket: Ticket | None = None) -> None:
        """The room changed: every process resends its state to the room's sockets.
        ``ticket``: a script's answer, whose figures are the room's now."""
        if ticket is not None:
            self._remember(room, ticket)
        self.publisher.changed(room)

    def saw(self, room: str, ticket: Ticket) -> None:
        """A script answered with ``ticket``: announces the room if its figures are not
        what this process last saw of it (upkeep in that script changed them). The first
        answer a process sees of a room has nothing to differ from: it is only kept."""
        before = self._remember(room, ticket)
        if before is not None and before != _figures(ticket):
            self.publisher.changed(room)

    def publish(self, room: str, frame: Mapping[str, Any]) -> None:
        """Sends ``frame`` to every socket of the room."""
        self.publisher.publish(room, frame)

    def forget(self, room: str) -> None:
        with self._lock:
            self._seen.pop(room, None)

    def _remember(self, room: str, ticket: Ticket) -> Figures | None:
        """Keeps the ticket's figures as the room's; returns those kept before."""
        with self._lock:
            before = self._seen.get(room)
            self._seen[room] = _figures(ticket)
            self._seen.move_to_end(room)
            if len(self._seen) > self.remembered:
                self._seen.popitem(last=False)
        return before


def _figures(ticket: Ticket) -> Figures:
    return ticket.waiting, ticket.active, ticket.capacity, ticket.room_status, ticket.notice
