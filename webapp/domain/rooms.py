"""The waiting-room engine: who holds a seat in a room and who waits in its line.

Every change is one Lua script (``webapp/lua/room_*.lua``) over one room's keys, so any
number of processes on any number of hosts agree. This module only parses arguments and
replies; the rules themselves live in ``room_lib.lua``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, NamedTuple

from webapp.redis.keys import Keys, RoomKeys
from webapp.redis.scripts import Scripts

RoomStatus = Literal["open", "paused", "closed"]
STATUSES: tuple[RoomStatus, ...] = ("open", "paused", "closed")
ROOM_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
MAX_NAME_LENGTH = 64
MAX_DISPLAY_NAME = 40
UPKEEP_BATCH = 200
GONE_REASONS = {
    "left": "you left",
    "removed": "an admin removed you",
    "dropped": "you missed your check-ins and dropped out of the line",
    "unclaimed": "the seat offered to you was not claimed in time",
    "grace": "you were away longer than the grace period",
    "session": "you did not check in for too long",
}


class RoomError(Exception):
    """Base of the engine's refusals; each carries a message for people."""


class InvalidInput(RoomError):
    pass


class RoomNotFound(RoomError):
    pass


class TicketNotFound(RoomError):
    pass


class TicketGone(RoomError):
    def __init__(self, why: str) -> None:
        super().__init__(f"this ticket has ended: {GONE_REASONS.get(why, why)}")
        self.why = why


class RoomClosed(RoomError):
    pass


class NotSeated(RoomError):
    pass


class SettingsChanged(Exception):
    """The room's settings changed since the caller read them: read them again."""


class JoinRefused(RoomError):
    """Admission control: the line is too long, or the wait would be. ``waiting`` is the
    line's length at the refusal; ``retry_after`` a hint in seconds."""

    def __init__(self, message: str, retry_after: int, waiting: int = 0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.waiting = waiting


def public_id(token: str) -> str:
    """Names a ticket's holder to others (participant lists, chat) without giving away
    the ticket, which is a secret: whoever has it can act for its holder."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def valid_room_name(name: str) -> bool:
    return 0 < len(name) <= MAX_NAME_LENGTH and set(name) <= ROOM_NAME_CHARS


def clean_display_name(raw: object) -> str:
    """A display name: printable, trimmed, at most 40 characters."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise InvalidInput("name must be a string")
    name = " ".join("".join(ch for ch in raw if ch.isprintable()).split())
    if len(name) > MAX_DISPLAY_NAME:
        raise InvalidInput(f"name must be at most {MAX_DISPLAY_NAME} characters")
    return name


# setting -> (smallest, largest) allowed value, for the integer settings
LIMITS = {
    "capacity": (1, 1_000_000),
    "dropout_seconds": (5, 3600),
    "grace_seconds": (1, 3600),
    "session_seconds": (10, 86400),
    "max_wait_seconds": (1, 7 * 86400),
    "max_line_length": (1, 10_000_000),
}


@dataclass(frozen=True)
class RoomSettings:
    capacity: int = 10
    dropout_seconds: int = 30
    grace_seconds: int = 15
    session_seconds: int = 600
    max_wait_seconds: int | None = None
    max_line_length: int | None = None
    status: RoomStatus = "open"

    def changed(self, changes: Mapping[str, Any]) -> RoomSettings:
        """These settings with ``changes`` applied; InvalidInput names the first bad one."""
        known = {f.name for f in fields(self)}
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in changes.items():
            if name not in known:
                raise InvalidInput(f"unknown setting {name!r}")
            values[name] = _check_setting(name, value)
        return RoomSettings(**values)

    def to_redis(self) -> list[str]:
        return [part for f in fields(self) for part in _field(f.name, getattr(self, f.name))]

    @classmethod
    def from_redis(cls, raw: Mapping[str, str]) -> RoomSettings:
        def number(name: str) -> int | None:
            value = raw.get(name, "")
            return int(value) if value else None

        return cls(
            capacity=number("capacity") or cls.capacity,
            dropout_seconds=number("dropout_seconds") or cls.dropout_seconds,
            grace_seconds=number("grace_seconds") or cls.grace_seconds,
            session_seconds=number("session_seconds") or cls.session_seconds,
            max_wait_seconds=number("max_wait_seconds"),
            max_line_length=number("max_line_length"),
            status=raw.get("status", "open"),  # type: ignore[arg-type]
        )

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _field(name: str, value: Any) -> tuple[str, str]:
    """A setting as a field and value of the settings hash ('' for None)."""
    return name, "" if value is None else str(value)


def _check_setting(name: str, value: Any) -> Any:
    if name == "status":
        if value not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)}")
        return value
    low, high = LIMITS[name]
    nullable = name in ("max_wait_seconds", "max_line_length")
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an integer or null" if nullable else "an integer"
        raise InvalidInput(f"{name} must be {kind}")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}")
    return value


class Ticket(NamedTuple):
    """One visitor's standing in one room, as a script saw it."""

    token: str
    state: str  # waiting | offered | admitted | ended
    position: int  # 1 = head of the line; 0 when seated
    waiting: int  # people in the line
    active: int  # seats held
    capacity: int
    room_status: str
    now: float  # the time the script used (Redis TIME unless a clock was given)
    why: str  # why an ended ticket ended
    name: str
    version: int  # the room's settings version when the script ran

    @property
    def seated(self) -> bool:
        return self.state in ("offered", "admitted")

    @property
    def ahead(self) -> int:
        return max(self.position - 1, 0)


class RoomSummary(NamedTuple):
    name: str
    capacity: int
    active: int
    waiting: int
    status: str


class Participant(NamedTuple):
    token: str
    name: str
    state: str
    since: float


class WaitingRooms:
    """The engine for every room. Thread-safe: share one per process."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        clock: Callable[[], float] | None = None,
        batch: int = UPKEEP_BATCH,
        sweep_every: float | None = None,
    ) -> None:
        """``sweep_every``: the interval at which a background sweep settles every room,
        or None if none runs. With it the scripts can tell an outage (no script ran for
        longer) from quiet, and keep that time off every deadline (``room_lib.lua``)."""
        self.client = client
        self.keys = keys
        self.scripts = Scripts(client)
        self.clock = clock
        self.batch = batch
        self._every = repr(float(sweep_every)) if sweep_every else ""

    def _now(self) -> str:
        return "" if self.clock is None else repr(self.clock())

    def _run(self, script: str, room: str, *args: Any) -> Any:
        if not valid_room_name(room):
            raise RoomNotFound(f"no room named {room[:80]!r}")
        keys = self.keys.room(room)
        return self.scripts[script](keys=keys.all(), args=[self._now(), self._every, *args])

    @staticmethod
    def _ticket(reply: list[Any], room: str) -> Ticket:
        code = _text(reply[0])
        ticket = Ticket(
            token=_text(reply[1]),
            state=_text(reply[2]),
            position=int(reply[3]),
            waiting=int(reply[4]),
            active=int(reply[5]),
            capacity=int(reply[6]),
            room_status=_text(reply[7]),
            now=float(reply[8]),
            why=_text(reply[9]),
            name=_text(reply[10]),
            version=int(reply[11]),
        )
        if code == "ok":
            return ticket
        if code == "no_room":
            raise RoomNotFound(f"no room named {room!r}")
        if code == "stale":
            raise SettingsChanged(room)
        if code == "unknown":
            raise TicketNotFound("no such ticket in this room")
        if code == "gone":
            raise TicketGone(ticket.why)
        if code == "closed":
            raise RoomClosed(f"room {room!r} is closed to new visitors")
        if code == "not_seated":
            raise NotSeated("this ticket does not hold a seat")
        if code == "full":
            raise JoinRefused("the line is full; please try again later", 60, ticket.waiting)
        if code == "too_long":
            message = "the wait is too long right now; please try again later"
            raise JoinRefused(message, 60, ticket.waiting)
        raise RuntimeError(f"unexpected reply {code!r} from the room script")

    # -- rooms ---------------------------------------------------------------

    def configure(self, room: str, changes: Mapping[str, Any]) -> RoomSettings:
        """Creates the room or changes its settings; returns the settings now in force."""
        if not valid_room_name(room):
            raise InvalidInput("room names are 1 to 64 characters of a-z, 0-9 and -")
        RoomSettings().changed(changes)  # refuses unknown or bad settings, writes nothing
        pairs = [part for name, value in changes.items() for part in _field(name, value)]
        defaults = RoomSettings().to_redis()
        self._run("room_configure", room, self.batch, len(changes), *pairs, *defaults)
        self.client.sadd(self.keys.rooms, room)
        return self.settings(room) or RoomSettings().changed(changes)  # unless deleted since

    def settings(self, room: str) -> RoomSettings | None:
        return self.versioned_settings(room)[0]

    def versioned_settings(self, room: str) -> tuple[RoomSettings | None, int]:
        """The room's settings (None if there is no such room) and their version, which
        every change raises by one."""
        if not valid_room_name(room):
            return None, 0
        raw = _texts(self.client.hgetall(self.keys.room(room).settings))
        if not raw:
            return None, 0
        return RoomSettings.from_redis(raw), int(raw.get("version") or 0)

    def delete(self, room: str) -> bool:
        """Removes the room and everything in it. One DEL: all its keys share a slot."""
        if not valid_room_name(room):
            return False
        removed = self.client.delete(*self.keys.room(room).all())
        self.client.srem(self.keys.rooms, room)
        return bool(removed)

    def names(self) -> list[str]:
        return sorted(_text(n) for n in self.client.smembers(self.keys.rooms))

    def summary(self, room: str) -> RoomSummary | None:
        """One room's figures in one round trip; None if there is no such room."""
        if not valid_room_name(room):
            return None
        keys = self.keys.room(room)
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(keys.settings, "capacity", "status")
        pipe.zcard(keys.seats)
        pipe.zcard(keys.line)
        (capacity, status), active, waiting = pipe.execute()
        if capacity is None:
            return None
        return RoomSummary(room, int(capacity), active, waiting, _text(status))

    def summaries(self) -> list[RoomSummary]:
        """Every room's figures; tidies index entries of rooms deleted meanwhile."""
        out = []
        for name in self.names():
            summary = self.summary(name)
            if summary is None:
                self.client.srem(self.keys.rooms, name)
            else:
                out.append(summary)
        return out

    def ticket_state(self, room: str, token: str) -> str | None:
        """A ticket's state as last written (waiting, offered, admitted, ended), without
        checking it in; None if unknown. A read only: it may lag a lapse not yet swept."""
        if not valid_room_name(room):
            return None
        raw = self.client.hget(self.keys.room(room).tickets, token)
        return None if raw is None else str(json.loads(raw)["st"])

    def participants(self, room: str) -> list[Participant]:
        """Who holds a seat, in the order they were seated."""
        keys = self.keys.room(room)
        tokens = [_text(t) for t in self.client.zrange(keys.seats, 0, -1)]
        if not tokens:
            return []
        people = []
        for token, raw in zip(tokens, self.client.hmget(keys.tickets, tokens), strict=True):
            if raw is None:
                continue
            record = json.loads(raw)
            people.append(Participant(token, record.get("n", ""), record["st"], record["a"]))
        return sorted(people, key=lambda p: p.since)

    # -- tickets -------------------------------------------------------------

    def join(
        self,
        room: str,
        identity: str = "",
        name: str = "",
        max_ahead: int | None = None,
        version: int | None = None,
    ) -> Ticket:
        """Admits the visitor, or puts them at the back of the line.

        The same ``identity`` joining again gets its live ticket back (a check-in).
        ``max_ahead`` is admission control: refuse if more people would be ahead.
        ``version``: the settings version ``max_ahead`` was worked out from; if the
        settings changed since, nothing is done and SettingsChanged is raised.
        """
        reply = self._run(
            "room_join",
            room,
            secrets.token_urlsafe(18),
            identity,
            name,
            "" if max_ahead is None else max_ahead,
            self.batch,
            "" if version is None else version,
        )
        return self._ticket(reply, room)

    def check_in(self, room: str, token: str) -> Ticket:
        return self._ticket(self._run("room_checkin", room, token, self.batch), room)

    def leave(self, room: str, token: str, why: str = "left") -> Ticket:
        return self._ticket(self._run("room_leave", room, token, why, self.batch), room)

    def presence(self, room: str, token: str, op: str, hold: float = 0) -> Ticket:
        """A live connection of a seated ticket: op is open, beat or close."""
        return self._ticket(self._run("room_presence", room, token, op, hold, self.batch), room)

    def sweep(self, room: str, rounds: int = 50) -> int:
        """Runs the room's upkeep until nothing is left to do (bounded); returns items."""
        total = 0
        for _ in range(rounds):
            handled = int(self._run("room_sweep", room, self.batch))
            if handled <= 0:
                break
            total += handled
        return total

    def stats(self, room: str) -> dict[str, float]:
        raw = self.client.hgetall(self.keys.room(room).stats)
        return {k: float(v) for k, v in _texts(raw).items()}

    def room_keys(self, room: str) -> RoomKeys:
        return self.keys.room(room)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _texts(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in raw.items()}
