"""The visitor as their signed session cookie knows them: a display name, a random
visitor id (the engine identity is ``visitor:<id>``, so a join from any tab finds the
same live ticket), the ticket of each room they hold a place in, and for a place that
ended, why (so every page of it says so, and none joins again by itself).

Every page, the move links and the claim links read and change the visitor here and
nowhere else. No routes here: the blueprints (``pages``, ``line``, ``move``,
``waitlist``, ``claims``) import this module, and it imports none of them.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, NamedTuple

from flask import session

from webapp.domain.rooms import public_id
from webapp.views import moves


class EndedMark(NamedTuple):
    """A place or seat of this browser that ended: the pages that showed it poll with
    its public id and are told why; a fresh visit shows the ended state too."""

    public: str  # the ended ticket's public id
    why: str  # left removed dropped unclaimed grace session moved ...
    seat: bool  # it was a seat in the room (else a place in line)


def name() -> str:
    return str(session.get("name", ""))


def set_name(name: str) -> None:
    session["name"] = name
    visitor_id()


def visitor_id() -> str:
    if "vid" not in session:
        session["vid"] = secrets.token_urlsafe(12)
    return str(session["vid"])


def identity() -> str:
    """The engine identity of this browser's joins."""
    return f"visitor:{visitor_id()}"


def tickets(data: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``data``: a session's contents read outside Flask (the waiting page's lean poll,
    ``webapp.views.visitor.lean_poll``), else this request's session."""
    held: dict[str, str] = (session if data is None else data).get("tickets", {})
    return held


def ticket(room: str, data: Mapping[str, Any] | None = None) -> str | None:
    return tickets(data).get(room)


def remember(room: str, token: str, position: int = 0) -> None:
    """A live ticket of this browser (joined, moved or claimed here): an older ended
    place in the room is forgotten. ``position``: where it joined the line, the start
    of the waiting page's progress bar."""
    if tickets().get(room) != token:
        session["start"] = {**session.get("start", {}), room: position}
    session["tickets"] = {**tickets(), room: token}
    dismiss(room)


def page_ticket(room: str, shown_id: str | None) -> tuple[str | None, EndedMark | None]:
    """The live ticket of ``room`` if it is the one a page shows (``shown_id``: its
    public id; None: any page), else why that page's ticket is no longer live; (None,
    None) if this browser never had a place there that it remembers."""
    token, mark = ticket(room), ended(room)
    if token is not None and (not shown_id or public_id(token) == shown_id):
        return token, None
    if mark is not None and (not shown_id or mark.public == shown_id):
        return None, mark
    if token is not None:  # a newer place than this page's, in another tab
        return None, EndedMark(shown_id or "", "replaced", False)
    return None, EndedMark(shown_id, "unknown", False) if shown_id else None


def start(room: str, position: int, data: Mapping[str, Any] | None = None) -> int:
    """The line's length ahead of this ticket when it joined (at least ``position``)."""
    joined_at = (session if data is None else data).get("start", {}).get(room) or position
    return max(int(joined_at), position)


def ended(room: str) -> EndedMark | None:
    mark = session.get("ended", {}).get(room)
    if not mark:
        return None
    public, why, *rest = mark  # cookies from before the seat flag have two parts
    return EndedMark(str(public), str(why), bool(rest and rest[0]))


def ended_marks() -> dict[str, EndedMark]:
    return {room: mark for room in session.get("ended", {}) if (mark := ended(room))}


def mark_ended(room: str, token: str, why: str, seat: bool = False) -> EndedMark:
    """The ticket ended: the session forgets it and keeps why."""
    held = dict(tickets())
    held.pop(room, None)
    session["tickets"] = held
    keep_shown(room, None)
    mark = EndedMark(public_id(token), why, seat)
    session["ended"] = {**session.get("ended", {}), room: list(mark)}
    return mark


def dismiss(room: str) -> None:
    """Forgets an ended place (the lobby's Dismiss, or a new place in the room)."""
    if room in session.get("ended", {}):
        session["ended"] = {r: m for r, m in session["ended"].items() if r != room}


def shown(room: str, data: Mapping[str, Any] | None = None) -> str | None:
    """The wait figure this browser's waiting page shows (``estimate.Shown.dumps()``):
    the next poll, on any worker, moves smoothly from it."""
    kept: str | None = (session if data is None else data).get("shown", {}).get(room)
    return kept


def keep_shown(room: str, figure: str | None) -> None:
    kept = {r: v for r, v in session.get("shown", {}).items() if r != room}
    if figure is not None:
        kept[room] = figure
    if kept or "shown" in session:
        session["shown"] = kept


def holder(room: str, data: Mapping[str, Any] | None = None) -> str | None:
    """This browser's id as the holder of a ticket moved or claimed here."""
    held: dict[str, str] = (session if data is None else data).get("holders", {})
    return held.get(room)


def hold(room: str, holder_id: str) -> None:
    session["holders"] = {**session.get("holders", {}), room: holder_id}


def gave_away(room: str, token: str) -> bool:
    """Whether this browser's place in ``room`` moved to another browser. If so, the
    ticket is forgotten (marked "moved") and the browser takes a new visitor id, so
    joining again gives it a new place instead of the moved one."""
    if not moves().moved_away(room, token, holder(room)):
        return False
    forget_moved(room, token)
    return True


def forget_moved(room: str, token: str) -> None:
    """This browser's place in ``room`` moved to another browser: it is forgotten
    (marked "moved") and the browser takes a new visitor id."""
    mark_ended(room, token, "moved")
    session["vid"] = secrets.token_urlsafe(12)


def email(room: str, data: Mapping[str, Any] | None = None) -> str:
    """The address this browser asked to be told at, for its place in ``room``."""
    return str((session if data is None else data).get("emails", {}).get(room, ""))


def set_email(room: str, address: str) -> None:
    kept = {r: a for r, a in session.get("emails", {}).items() if r != room}
    if address:
        kept[room] = address
    session["emails"] = kept


def welcome(room: str) -> None:
    """The next room page of ``room`` greets the visitor (their turn came on the
    waiting page, perhaps in a hidden tab)."""
    session["welcome"] = room


def welcomed(room: str) -> bool:
    return bool(session.pop("welcome", None) == room)


def entries() -> dict[str, str]:
    """The signed entry token of each waitlist this browser signed up to."""
    held: dict[str, str] = session.get("entries", {})
    return held


def keep_entry(room: str, token: str | None) -> None:
    kept = {r: t for r, t in entries().items() if r != room}
    if token is not None:
        kept[room] = token
    session["entries"] = kept


def customer(room: str) -> str | None:
    """The site's signed token for its customer that brought this browser to ``room``
    (``?identity=``), until a join uses it."""
    kept = session.get("customers", {})
    found = kept.get(room) if isinstance(kept, dict) else None
    return found if isinstance(found, str) else None


def keep_customer(room: str, token: str | None) -> None:
    kept = {r: t for r, t in session.get("customers", {}).items() if r != room}
    if token:
        kept[room] = token
    session["customers"] = kept
