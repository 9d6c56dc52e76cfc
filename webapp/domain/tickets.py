"""A visitor's ticket and the small values around it: what a room script answers about
one ticket, how a ticket is named to others, made and checked. No Flask here."""

from __future__ import annotations

import base64
import hashlib
import secrets
from functools import lru_cache
from typing import Any, NamedTuple

from webapp.domain.join_limits import Counting
from webapp.domain.refusals import InvalidInput, Reply, check
from webapp.redis.replies import text

ROOM_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
MAX_NAME_LENGTH = 64
MAX_DISPLAY_NAME = 40
CODE_CHARS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base 32: no I, L, O, U
LIVE = ("waiting", "offered", "admitted")  # the states of a ticket that holds a place


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
    window: float = 0.0  # seconds: the check-in window a waiting ticket was just granted

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
# version, email, language, support code, the auto puzzle's threshold; and the limits
# it is counted under
Joiner = tuple[str, str, str, str, str, str, str, str, str, Counting]


def ticket_reply(reply: list[Any], room: str, unknown: str = "unknown") -> Ticket:
    """The Ticket of a room script's reply ``{code, token, state, position, waiting,
    active, capacity, status, now, why, name, version, notice, support code, window}``,
    or the refusal its code means (``unknown``: the code a waitlist's missing entry
    means)."""
    code = text(reply[0])
    ticket = Ticket(
        token=text(reply[1]),
        state=text(reply[2]),
        position=int(reply[3]),
        waiting=int(reply[4]),
        active=int(reply[5]),
        capacity=int(reply[6]),
        room_status=text(reply[7]),
        now=float(reply[8]),
        why=text(reply[9]),
        name=text(reply[10]),
        version=int(reply[11]),
        notice=text(reply[12]),
        support_code=text(reply[13]),
        window=float(reply[14]) if len(reply) > 14 else 0.0,
    )
    check(unknown if code == "unknown" else code, Reply(room, ticket.why, ticket.waiting))
    return ticket


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


def new_ticket() -> tuple[str, str]:
    """A fresh ticket (a secret: 144 random bits) and the support code proposed for it
    (30 random bits of its own, so the code tells nothing of the ticket; room_join.lua
    makes another on the rare clash with a code in use)."""
    raw = secrets.token_bytes(22)
    n = int.from_bytes(raw[18:], "big")
    code = "".join(CODE_CHARS[(n >> shift) & 31] for shift in (0, 5, 10, 15, 20, 25))
    return base64.urlsafe_b64encode(raw[:18]).decode(), code
