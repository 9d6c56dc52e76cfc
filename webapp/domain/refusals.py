"""The engine's refusals: one exception class per reason, and one table from the code a
room or waitlist script answers with to the exception it means. Each refusal carries a
message for people (English; ``webapp.views.shared.words`` says it in the visitor's
language). No Flask here."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

GONE_REASONS = {
    "left": "you left",
    "removed": "an admin removed you",
    "dropped": "you missed your check-ins and dropped out of the line",
    "unclaimed": "the seat offered to you was not claimed in time",
    "grace": "you were away longer than the grace period",
    "session": "you did not check in for too long",
    "released": "the site let you go (your visit is over)",
    "sold_out": "it sold out before your turn",
    "event_ended": "the event has ended",
}


class RoomError(Exception):
    """Base of the engine's refusals; each carries a message for people."""


class InvalidInput(RoomError):
    pass


class RoomNotFound(RoomError):
    pass


class TicketNotFound(RoomError):
    pass


class EntryNotFound(TicketNotFound):
    pass


class KnownAddress(RoomError):
    """A sign-up with an address signed up already, from another device than the one
    that made the entry: its owner was mailed the entry's link; nothing is answered."""


class TicketGone(RoomError):
    def __init__(self, why: str) -> None:
        super().__init__(f"this ticket has ended: {GONE_REASONS.get(why, why)}")
        self.why = why


class RoomClosed(RoomError):
    pass


class NotOpenYet(RoomClosed):
    """A scheduled drop before its pre-queue (or its start, without one) opens."""


class EventEnded(RoomClosed):
    """A scheduled drop after its end: no new joins."""


class SoldOut(RoomError):
    """The room's stock is gone: no new joins."""


class DropDue(Exception):
    """The drop's start is owed: hold it (drop_start.lua), then join again."""


class NotSeated(RoomError):
    pass


class NotWaiting(RoomError):
    pass


class SettingsConflict(RoomError):
    """A change of settings that cannot be made while people wait (a room's kind, a
    waitlist's ordering); nothing was changed."""


class DrawPending(RoomError):
    """A lottery waitlist admits nobody before its draw."""


class NotAWaitlist(RoomError):
    """The room is a live room: people join it on its page, not with an email."""


class NotALottery(RoomError):
    """Only a lottery waitlist holds a draw."""


class NotHeld(RoomError):
    """The referral is not held for review (never held, or released or voided already)."""


class OldAddress(InvalidInput):
    """A confirmation link sent to an address its entry corrected since: it confirms
    nothing (the link to the corrected address does)."""


class PuzzleAsked(RoomError):
    """The room's puzzle is "auto", more joined in the last minute than its threshold,
    and the join brought no solution: it took no place and counts nowhere (the caller
    hands out a challenge: ``webapp.domain.admission``)."""


class PlaceMoved(RoomError):
    """A waiting page's place moved to another browser (a "continue on another device"
    link): the page shows it ended, and touches nothing."""


class SettingsChanged(Exception):
    """The room's settings changed since the caller read them: read them again."""


class JoinRefused(RoomError):
    """Admission control: the line is too long, or the wait would be. ``waiting`` is the
    line's length at the refusal; ``retry_after`` a hint in seconds."""

    def __init__(self, message: str, retry_after: int, waiting: int = 0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.waiting = waiting


REJECT_RETRY = 300  # seconds a joiner turned away by queueing_method reject is told to wait


class QueueRejecting(JoinRefused):
    """The room's queueing_method is reject: it takes no new joins for now (people in
    line keep their places, people inside their seats)."""

    def __init__(self, room: str) -> None:
        super().__init__(
            f"room {room!r} takes no new visitors for now; please try again later", REJECT_RETRY
        )


class Reply(NamedTuple):
    """What a refusing script said besides its code."""

    room: str
    why: str = ""  # gone: why the ticket ended
    waiting: int = 0  # full, too_long: the line's length
    detail: str = ""  # conflict: what cannot change


LONG_WAIT = 60  # seconds a refused joiner is told to wait when the rate is unknown

# Every refusal code of the room and waitlist scripts. "unknown" is a ticket of a live
# room; a waitlist's parser asks for "unknown_entry" instead.
REFUSALS: dict[str, Callable[[Reply], Exception]] = {
    "no_room": lambda r: RoomNotFound(f"no room named {r.room!r}"),
    "stale": lambda r: SettingsChanged(r.room),
    "unknown": lambda r: TicketNotFound("no such ticket in this room"),
    "unknown_entry": lambda r: EntryNotFound("no such entry on this waitlist"),
    "gone": lambda r: TicketGone(r.why),
    "moved": lambda r: PlaceMoved("this place moved to another browser"),
    "closed": lambda r: RoomClosed(f"room {r.room!r} is closed to new visitors"),
    "rejecting": lambda r: QueueRejecting(r.room),
    "waitlist": lambda r: RoomClosed(
        f"room {r.room!r} is a waitlist: sign up to it with your email"
    ),
    "not_open_yet": lambda r: NotOpenYet(f"room {r.room!r} is not open yet"),
    "event_ended": lambda r: EventEnded(f"room {r.room!r} has ended"),
    "sold_out": lambda r: SoldOut(f"room {r.room!r} is sold out"),
    "due": lambda r: DropDue(r.room),
    "puzzle": lambda r: PuzzleAsked(f"room {r.room!r} asks a solved puzzle of a new joiner"),
    "not_seated": lambda r: NotSeated("this ticket does not hold a seat"),
    "not_waiting": lambda r: NotWaiting("this ticket is not waiting in line"),
    "unconfirmed": lambda r: NotWaiting("this entry has not confirmed its email yet"),
    "full": lambda r: JoinRefused("the line is full; please try again later", LONG_WAIT, r.waiting),
    "too_long": lambda r: JoinRefused(
        "the wait is too long right now; please try again later", LONG_WAIT, r.waiting
    ),
    "not_drawn": lambda r: DrawPending("nobody is admitted before the lottery's draw"),
    "conflict": lambda r: SettingsConflict(r.detail),
    "not_waitlist": lambda r: NotAWaitlist(f"room {r.room!r} is not a waitlist"),
    "not_lottery": lambda r: NotALottery(f"room {r.room!r} is not a lottery"),
    "not_held": lambda r: NotHeld("this referral is not held for review"),
    "old_address": lambda r: OldAddress(
        "this link was sent to an address the entry has corrected since"
    ),
}


def refusal(code: str, reply: Reply) -> Exception:
    """The exception a script's refusal ``code`` means."""
    make = REFUSALS.get(code)
    if make is None:
        return RuntimeError(f"unexpected reply {code!r} from a room script")
    return make(reply)


def check(code: str, reply: Reply) -> None:
    """Returns for "ok"; raises the refusal for any other code."""
    if code != "ok":
        raise refusal(code, reply)
