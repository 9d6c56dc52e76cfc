"""Joins a room refused, counted by reason (issue 31): for ``/metrics`` (a counter per
room and reason in the stats hash, read at scrape time) and for the room's report (per
minute, in the history hash). ``Admission`` counts every refusal of a join, whichever
step refused it; nothing else does. No Flask here.

The reasons, and the status a client is answered with (``webapp.web.metrics`` labels the
counter with it; the views decide it, this table only repeats what they answer)."""

from __future__ import annotations

from typing import Any

from webapp.domain.drops import PrequeueCapped
from webapp.domain.identity import IdentityInvalid, IdentityRequired
from webapp.domain.join_limits import Throttled
from webapp.domain.refusals import (
    EventEnded,
    InvalidInput,
    JoinRefused,
    NotOpenYet,
    QueueRejecting,
    RoomClosed,
    SoldOut,
)
from webapp.redis.keys import Keys

# reason -> the status a client is answered with
REASONS: dict[str, int] = {
    "throttled": 429,  # the join limits of an address or a network
    "prequeue_capped": 429,  # a drop's pre-queue caps
    "puzzle": 403,  # a proof of work asked (none given, or a wrong, expired or used one)
    "identity_required": 401,
    "identity_invalid": 401,
    "sold_out": 410,
    "event_ended": 409,
    "not_open_yet": 409,
    "closed": 409,
    "admission_control": 503,  # the line is full, or the wait too long
    "rejecting": 503,  # the room's queueing_method is reject (issue 30)
    "invalid_input": 400,  # a bad email, name or token
}
# most specific first: PrequeueCapped is a Throttled, NotOpenYet and EventEnded are closed
_BY_CLASS: tuple[tuple[type[Exception], str], ...] = (
    (PrequeueCapped, "prequeue_capped"),
    (Throttled, "throttled"),
    (IdentityRequired, "identity_required"),
    (IdentityInvalid, "identity_invalid"),
    (SoldOut, "sold_out"),
    (EventEnded, "event_ended"),
    (NotOpenYet, "not_open_yet"),
    (RoomClosed, "closed"),
    (QueueRejecting, "rejecting"),  # a JoinRefused of its own
    (JoinRefused, "admission_control"),
    (InvalidInput, "invalid_input"),
)


def reason_of(error: Exception) -> str | None:
    """The reason a join refused with ``error`` is counted under; None for what is no
    refusal of the room (no such room, an outage, a bug)."""
    for kind, reason in _BY_CLASS:
        if isinstance(error, kind):
            return reason
    return None


class JoinRefusals:
    def __init__(self, client: Any, keys: Keys, scripts: Any) -> None:
        self.client, self.keys, self.scripts = client, keys, scripts

    def count(self, room: str, reason: str, now: float) -> None:
        """One refused join of ``room`` (nothing if the room does not exist)."""
        keys = self.keys.room(room)
        self.scripts["room_refused"](
            keys={"settings": keys.settings, "stats": keys.stats, "history": keys.history},
            args=[now, reason],
        )
