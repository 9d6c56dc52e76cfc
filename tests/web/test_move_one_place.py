"""A move link moves the one place it names (issue 25, hole 2): the browser that takes
it gets nothing of the giver's places in other rooms."""

from __future__ import annotations

import re
from typing import Any


def tickets_of(visitor: Any) -> dict[str, str]:
    with visitor.client.session_transaction() as session:
        return dict(session.get("tickets", {}))


def take_link(giver: Any, taker: Any, room: str) -> None:
    offer = giver.get(f"/rooms/{room}/move").get_data(as_text=True)
    link = re.search(r'value="http://localhost(/move/[^"]+)"', offer)
    assert link is not None
    csrf = taker.csrf(link.group(1))
    taken = taker.client.post(link.group(1), data={"csrf_token": csrf})
    assert taken.status_code == 303


def test_a_move_link_gives_away_only_its_own_place(
    make_visitor: Any, make_room: Any, reports: Any
) -> None:
    """The taker holds the moved place, and joining another room gives it its own new
    place there, never the giver's (which the taker cannot end either)."""
    make_room("hall", capacity=1)
    make_room("annex", capacity=1)
    make_visitor("Ann").join("hall")
    make_visitor("Ann2").join("annex")
    bob = make_visitor("Bob")
    bob.join("hall")
    bob.join("annex")
    bobs = tickets_of(bob)
    eve = make_visitor("Eve")
    take_link(bob, eve, "hall")
    assert tickets_of(eve) == {"hall": bobs["hall"]}
    page = eve.join("hall").get_data(as_text=True)  # the moved place, not a new one
    assert "Number 1 in line" in page and tickets_of(eve)["hall"] == bobs["hall"]
    eve.join("annex")
    assert tickets_of(eve)["annex"] != bobs["annex"]
    eve.leave("annex")
    assert reports.ticket_state("annex", bobs["annex"]) == "waiting"
    assert "Number 1 in line" in bob.get("/rooms/annex").get_data(as_text=True)
