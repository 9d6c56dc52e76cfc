"""The proof of work in front of a join (issue 25; ``webapp.domain.challenge``): whether
this join must carry a solved challenge, and a fresh one to solve. The JSON API's join
and challenge routes (``webapp.views.api``) and the room's join button
(``webapp.views.pages``) ask here. No routes here.

A join that takes no new place never solves one: a browser that holds a live place in
the room (joined, moved or claimed there; the lobby's places), an API join whose
``Idempotency-Key`` holds a live ticket there.
"""

from __future__ import annotations

from typing import Any

from webapp.domain.tickets import LIVE
from webapp.i18n import _
from webapp.views import challenges, lobby, reports, visitor


def browser_holds_place(room: str) -> bool:
    token = visitor.ticket(room)
    return token is not None and reports().ticket_state(room, token) in LIVE


def api_holds_place(room: str, key: str) -> bool:
    return bool(key) and reports().holds(room, f"api:{key}")


def required(room: str) -> bool:
    """Whether a new join of ``room`` must carry a solved challenge now."""
    return challenges().needed(room, lobby().settings(room))


def passes(room: str, payload: object) -> bool:
    """The solution is right, of this room, not expired, and used now (once)."""
    return challenges().redeem(room, payload)


def fresh(room: str) -> dict[str, Any]:
    """A new challenge for the room, at its cost now (under auto: the busier, the more)."""
    found = challenges()
    return found.issue(room, found.cost(room, lobby().settings(room)))


def words() -> str:
    """Why a join without a solution was refused, in the visitor's language."""
    return _(
        "This room asks your browser to solve a small puzzle before you join, to keep "
        "bots out. Press the button: it takes a second or two (longer while very many "
        "are joining), and needs JavaScript."
    )
