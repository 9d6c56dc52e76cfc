"""A busy room for the tests of statistics and estimates: full seats, a line that is
never empty, and seats turning over at a pace the test sets."""

from __future__ import annotations

from typing import Any

from webapp.domain import pace
from webapp.domain.reports import Reports
from webapp.domain.rooms import WaitingRooms

ROOM = "busy"


def busy_room(
    rooms: WaitingRooms, capacity: int = 1, waiting: int = 1, **settings: Any
) -> list[str]:
    """A room whose seats are full, with ``waiting`` people in line; the seated tokens."""
    rooms.configure(ROOM, {"capacity": capacity, "dropout_seconds": 3600, **settings})
    seated = [rooms.join(ROOM).token for _ in range(capacity)]
    for _ in range(waiting):
        rooms.join(ROOM)
    return seated


def turn_over(rooms: WaitingRooms, clock: Any, seated: list[str], hold: float, times: int) -> None:
    """Each time: a newcomer joins the line, ``hold`` seconds pass, the longest seated
    leaves and the head of the line takes the seat."""
    reports = Reports(rooms)
    for _ in range(times):
        rooms.join(ROOM)
        clock.advance(hold)
        rooms.leave(ROOM, seated.pop(0))
        head = reports.participants(ROOM)[-1]
        seated.append(rooms.check_in(ROOM, head.token).token)


def measured(rooms: WaitingRooms, clock: Any, capacity: int = 1) -> pace.Rates:
    """The busy room's rates as its statistics stand now."""
    found = pace.rates(Reports(rooms).stats(ROOM), clock.now, capacity)
    assert found is not None
    return found
