"""The waiting-room engine: who holds a seat in a room and who waits in its line.

Every change is one Lua script (``webapp/lua/room_*.lua``) over one room's keys, so any
number of processes on any number of hosts agree. This module only parses arguments and
replies; the rules themselves live in ``room_lib.lua``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from webapp.domain.settings import InvalidSetting, RoomSettings, checked, redis_pairs
from webapp.redis.coalesce import Coalescer
from webapp.redis.keys import Keys, RoomKeys
from webapp.redis.scripts import Scripts

ROOM_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
MAX_NAME_LENGTH = 64
MAX_DISPLAY_NAME = 40
UPKEEP_BATCH = 200
IDLE_TTL = 172800  # seconds: an untouched room's runtime keys expire (room_lib.lua's)
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


class NotWaiting(RoomError):
    pass


class SettingsConflict(RoomError):
    """A change of settings that cannot be made while people wait (a room's kind, a
    waitlist's ordering); nothing was changed."""


class DrawPending(RoomError):
    """A lottery waitlist admits nobody before its draw."""


class SettingsChanged(Exception):
    """The room's settings changed since the caller read them: read them again."""


class JoinRefused(RoomError):
    """Admission control: the line is too long, or the wait would be. ``waiting`` is the
    line's length at the refusal; ``retry_after`` a hint in seconds."""

    def __init__(self, message: str, retry_after: int, waiting: int = 0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.waiting = waiting


@lru_cache(maxsize=65536)  # a room's state names every seated ticket at every read
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
    notice: str  # the room's notice from its admins ('' = none)
    support_code: str  # names the ticket to an admin (6 characters)

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
    notice: str = ""


class Admission(NamedTuple):
    tokens: tuple[str, ...]  # the tickets offered a seat, in line order
    replay: bool  # the request id was seen before: this is what it admitted then


class Participant(NamedTuple):
    token: str
    name: str
    state: str
    since: float


# A joiner's arguments to room_join.lua: token, identity, name, most ahead, settings
# version, email, language, support code
Joiner = tuple[str, str, str, str, str, str, str, str]

CODE_CHARS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base 32: no I, L, O, U


def new_ticket() -> tuple[str, str]:
    """A fresh ticket (a secret: 144 random bits) and the support code proposed for it
    (30 random bits of its own, so the code tells nothing of the ticket; room_join.lua
    makes another on the rare clash with a code in use)."""
    raw = secrets.token_bytes(22)
    n = int.from_bytes(raw[18:], "big")
    code = "".join(CODE_CHARS[(n >> shift) & 31] for shift in (0, 5, 10, 15, 20, 25))
    return base64.urlsafe_b64encode(raw[:18]).decode(), code


class WaitingRooms:
    """The engine for every room. Thread-safe: share one per process."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        clock: Callable[[], float] | None = None,
        batch: int = UPKEEP_BATCH,
        sweep_every: float | None = None,
        coalesce: float | None = None,
    ) -> None:
        """``sweep_every``: the interval at which a background sweep settles every room,
        or None if none runs. With it the scripts can tell an outage (no script ran for
        longer) from quiet, and keep that time off every deadline (``room_lib.lua``).
        ``coalesce``: joins, check-ins and predictions of one room made at once in this
        process go to Redis together (``webapp/redis/coalesce.py``), each waiting at most
        this many seconds for its answer; None: each is its own call."""
        self.client = client
        self.keys = keys
        self.scripts = Scripts(client)
        self.clock = clock
        self.batch = batch
        self._every = repr(float(sweep_every)) if sweep_every else ""
        self._check_ins: Coalescer[str, str, Ticket] | None = None
        self._joins: Coalescer[str, Joiner, Ticket] | None = None
        self._predictions: Coalescer[str, tuple[str, str], int] | None = None
        if coalesce is not None:
            self._check_ins = Coalescer(self.check_in_many, wait=coalesce)
            self._joins = Coalescer(self.join_many, wait=coalesce)
            self._predictions = Coalescer(self.predict_many, wait=coalesce)

    def _now(self) -> str:
        return "" if self.clock is None else repr(self.clock())

    def argv_header(self) -> list[Any]:
        """ARGV 1 to 3 of every script about a room (room_base.lua): now ('' = Redis
        TIME), the sweep interval ('' = none runs), the upkeep batch size."""
        return [self._now(), self._every, self.batch]

    def _run(self, script: str, room: str, *args: Any, more_keys: tuple[str, ...] = ()) -> Any:
        if not valid_room_name(room):
            raise RoomNotFound(f"no room named {room[:80]!r}")
        keys = [*_room_keys(self.keys, room), *more_keys]
        return self.scripts[script](keys=keys, args=[*self.argv_header(), *args])

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
            notice=_text(reply[12]),
            support_code=_text(reply[13]),
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
        if code == "waitlist":
            raise RoomClosed(f"room {room!r} is a waitlist: sign up to it with your email")
        if code == "not_seated":
            raise NotSeated("this ticket does not hold a seat")
        if code == "not_waiting":
            raise NotWaiting("this ticket is not waiting in line")
        if code == "full":
            raise JoinRefused("the line is full; please try again later", 60, ticket.waiting)
        if code == "too_long":
            message = "the wait is too long right now; please try again later"
            raise JoinRefused(message, 60, ticket.waiting)
        raise RuntimeError(f"unexpected reply {code!r} from the room script")

    # -- rooms ---------------------------------------------------------------

    def configure(self, room: str, changes: Mapping[str, Any], who: str = "api") -> RoomSettings:
        """Creates the room or changes its settings; returns the settings now in force."""
        if not valid_room_name(room):
            raise InvalidInput("room names are 1 to 64 characters of a-z, 0-9 and -")
        try:
            wanted = checked(changes)  # refuses unknown or bad settings, writes nothing
        except InvalidSetting as error:
            raise InvalidInput(str(error)) from None
        defaults = RoomSettings().to_redis()
        pairs = redis_pairs(wanted)
        # A seed for a lottery's draw, used only if the room comes to lottery ordering
        # now: its SHA-256 is published at once, the seed revealed at the draw.
        seed = secrets.token_hex(32)
        commitment = hashlib.sha256(bytes.fromhex(seed)).hexdigest()
        reply = self._run(
            "room_configure",
            room,
            who,
            seed,
            commitment,
            len(wanted),
            *pairs,
            *defaults,
            more_keys=tuple(self.keys.waitlist(room).all()),
        )
        if _text(reply[0]) == "conflict":
            raise SettingsConflict(_text(reply[9]))
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
        keys = [*self.keys.room(room).all(), *self.keys.waitlist(room).all()]
        keys += [self.keys.deliveries(room), self.keys.claims(room)]  # mail, claim links
        removed = self.client.delete(*keys)
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
        pipe.hmget(keys.settings, "capacity", "status", "notice")
        pipe.zcard(keys.seats)
        pipe.zcard(keys.line)
        (capacity, status, notice), active, waiting = pipe.execute()
        if capacity is None:
            return None
        return RoomSummary(room, int(capacity), active, waiting, _text(status), notice or "")

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

    def seat_deadline(self, room: str, token: str) -> float | None:
        """When a seated (or offered) ticket's seat is given up unless renewed or claimed;
        None if it holds none. On the lease clock, which runs behind ``now`` only by
        outages, so it is at worst a little early as a "time left"."""
        if not valid_room_name(room):
            return None
        score = self.client.zscore(self.keys.room(room).seats, token)
        return None if score is None else float(score)

    def rename(self, room: str, token: str, name: str) -> bool:
        """Gives a live ticket a new display name (already cleaned); False if none."""
        return bool(self._run("room_rename", room, token, name))

    def set_email(self, room: str, token: str, email: str, lang: str = "en") -> bool:
        """Gives a waiting ticket the email (normalised) it is told at when a seat is
        offered to it, or removes it (``email`` empty); False if the ticket is not
        waiting (nothing changed)."""
        return bool(self._run("room_email", room, token, email, lang))

    def email_of(self, room: str, token: str) -> str:
        """The email a ticket is told at ("" if none)."""
        raw = self.client.hget(self.keys.room(room).tickets, token)
        return str(json.loads(raw).get("em", "")) if raw else ""

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
            record = orjson.loads(raw)  # a thousand seats, a thousand records: the fast parser
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
        email: str = "",
        lang: str = "",
    ) -> Ticket:
        """Admits the visitor, or puts them at the back of the line.

        The same ``identity`` joining again gets its live ticket back (a check-in).
        ``max_ahead`` is admission control: refuse if more people would be ahead.
        ``version``: the settings version ``max_ahead`` was worked out from; if the
        settings changed since, nothing is done and SettingsChanged is raised.
        ``email`` (normalised by the caller) and ``lang``: told by the outbox (an email)
        when a seat is offered to this ticket.
        """
        token, code = new_ticket()
        joiner = (
            token,
            identity,
            name,
            "" if max_ahead is None else str(max_ahead),
            "" if version is None else str(version),
            email,
            lang if email else "",
            code,
        )
        if self._joins is not None:
            return self._joins(room, joiner)
        return self._ticket(self._run("room_join", room, *joiner)[0], room)

    def join_many(self, room: str, joiners: Sequence[Joiner]) -> list[Ticket | Exception]:
        """Joins of several visitors of one room in one script call, in order: each
        ticket, or the refusal ``join`` would raise for it."""
        replies = self._run("room_join", room, *(a for j in joiners for a in j))
        return [self._outcome(reply, room) for reply in replies]

    def check_in(self, room: str, token: str) -> Ticket:
        if self._check_ins is not None:
            return self._check_ins(room, token)
        return self._ticket(self._run("room_checkin", room, token)[0], room)

    def check_in_many(self, room: str, tokens: Sequence[str]) -> list[Ticket | Exception]:
        """Check-ins of several tickets of one room in one script call, in order: each
        ticket, or the refusal ``check_in`` would raise for it."""
        replies = self._run("room_checkin", room, *tokens)
        return [self._outcome(reply, room) for reply in replies]

    def _outcome(self, reply: list[Any], room: str) -> Ticket | Exception:
        """A reply of a batch: the ticket, or what ``_ticket`` raises for it."""
        try:
            return self._ticket(reply, room)
        except (RoomError, SettingsChanged) as refusal:
            return refusal

    def leave(self, room: str, token: str, why: str = "left", who: str = "") -> Ticket:
        """Ends the ticket (idempotent); ``why`` removed with ``who``: an admin did."""
        return self._ticket(self._run("room_leave", room, token, why, who), room)

    def admit(
        self,
        room: str,
        count: int,
        request_id: str = "",
        override: bool = False,
        who: str = "",
        token: str = "",
    ) -> Admission:
        """Offers seats to the next ``count`` in line (only as many as are free unless
        ``override``), or to the one waiting ``token``. The same ``request_id`` again
        admits nobody new. In a waitlist room: admits the next ``count`` confirmed
        entries, or the one entry ``token`` (``webapp.domain.waitlist``)."""
        request = self.keys.admit_request(room, request_id)
        code, tokens, replay = self._run(
            "room_admit",
            room,
            count,
            request_id,
            "1" if override else "0",
            who,
            token,
            more_keys=(request, *self.keys.waitlist(room).all()),
        )
        if _text(code) == "no_room":
            raise RoomNotFound(f"no room named {room!r}")
        if _text(code) == "not_waiting":
            raise NotWaiting("this ticket is not waiting in line")
        if _text(code) == "unconfirmed":
            raise NotWaiting("this entry has not confirmed its email yet")
        if _text(code) == "not_drawn":
            raise DrawPending("nobody is admitted before the lottery's draw")
        return Admission(tuple(json.loads(tokens)), _text(replay) == "1")

    def move(self, room: str, token: str, place: int, who: str) -> Ticket:
        """Moves a waiting ticket to ``place`` in line (1 = the front)."""
        return self._ticket(self._run("room_move", room, token, place, who), room)

    def set_notice(self, room: str, text: str, who: str) -> None:
        """The notice every waiting page and the room show ('' clears it)."""
        if _text(self._run("room_notice", room, text, who)) == "no_room":
            raise RoomNotFound(f"no room named {room!r}")

    def predict(self, room: str, token: str, wait: float, low: float, high: float) -> None:
        """Keeps the wait shown to a ticket at its join, to score it at its admission."""
        prediction = (token, f"{wait:.1f},{low:.1f},{high:.1f}")
        if self._predictions is not None:
            self._predictions(room, prediction)
        else:
            self.predict_many(room, [prediction])

    def predict_many(self, room: str, predictions: Sequence[tuple[str, str]]) -> list[int]:
        """Several ``predict`` of one room in one script call: (token, "wait,low,high")
        each; 1 for each kept, 0 for a ticket that no longer waits."""
        keys = self.keys.room(room)
        pairs = [part for prediction in predictions for part in prediction]
        kept = self.scripts["room_predict"](
            keys=[keys.line, keys.predictions], args=[IDLE_TTL, *pairs]
        )
        return [int(k) for k in kept]

    def presence(self, room: str, token: str, op: str, hold: float = 0) -> Ticket:
        """A live connection of a seated ticket: op is open, beat or close."""
        return self._ticket(self._run("room_presence", room, token, op, hold), room)

    def sweep(self, room: str, rounds: int = 50) -> int:
        """Runs the room's upkeep until nothing is left to do (bounded); returns items."""
        total = 0
        for _ in range(rounds):
            handled = int(self._run("room_sweep", room))
            if handled <= 0:
                break
            total += handled
        return total

    def stats(self, room: str) -> dict[str, float]:
        """The room's statistics: counters as stored, and each event's decayed figures
        (one field "n s q t" in Redis, room_lib.lua's record) as "<event>:n|s|q|t"."""
        stats: dict[str, float] = {}
        for field, value in _texts(self.client.hgetall(self.keys.room(room).stats)).items():
            figures = value.split(" ")
            if len(figures) == 1:
                stats[field] = float(value)
            else:
                stats.update(zip(_figure_names(field), map(float, figures), strict=True))
        return stats

    def room_keys(self, room: str) -> RoomKeys:
        return self.keys.room(room)


@lru_cache(maxsize=256)
def _figure_names(event: str) -> tuple[str, ...]:
    """The names of an event's four figures, "<event>:n|s|q|t" (built once each)."""
    return tuple(f"{event}:{figure}" for figure in "nsqt")


@lru_cache(maxsize=4096)
def _room_keys(keys: Keys, room: str) -> tuple[str, ...]:
    """The room's sixteen keys, built once per room rather than on every call."""
    return tuple(keys.room(room).all())


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _texts(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in raw.items()}
