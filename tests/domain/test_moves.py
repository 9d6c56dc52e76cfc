"""Moving a place to another device, and renaming a ticket, against real Redis (and a
Redis Cluster: the `db` fixture)."""

from __future__ import annotations

import pytest

from webapp.domain.moves import LIFETIME, MoveRefused, Moves
from webapp.redis.scripts import Scripts

ROOM = "hall"


@pytest.fixture
def client(db):
    return db


@pytest.fixture
def rooms(rooms):
    """The engine with the room these tests use."""
    rooms.configure(ROOM, {"capacity": 1})
    return rooms


@pytest.fixture
def moves(db, keys, clock):
    return Moves(db, keys, Scripts(db), secret="s3cret", clock=clock)


def test_a_link_is_taken_once(rooms, moves):
    """The first taker becomes the holder; a second try is refused and changes nothing."""
    ticket = rooms.join(ROOM, identity="visitor:a", name="Ann")
    link = moves.offer(ROOM, ticket.token, "a")
    moved = moves.take(link)
    assert (moved.room, moved.token, moved.identity) == (ROOM, ticket.token, "a")
    assert moves.moved_away(ROOM, ticket.token, None)
    assert not moves.moved_away(ROOM, ticket.token, moved.holder)
    with pytest.raises(MoveRefused) as refused:
        moves.take(link)
    assert refused.value.reason == "used"
    assert not moves.moved_away(ROOM, ticket.token, moved.holder)


def test_a_ticket_never_moved_is_not_moved_away(rooms, moves):
    """Without a move, no browser is told its place moved."""
    ticket = rooms.join(ROOM, identity="visitor:a")
    assert not moves.moved_away(ROOM, ticket.token, None)


def test_an_old_or_altered_link_is_refused(rooms, moves, clock):
    """Past its lifetime, or with its text changed, a link is refused and marks nothing."""
    ticket = rooms.join(ROOM, identity="visitor:a")
    link = moves.offer(ROOM, ticket.token, "a")
    with pytest.raises(MoveRefused) as tampered:
        moves.take(link[:-2] + ("AA" if not link.endswith("AA") else "BB"))
    assert tampered.value.reason == "invalid"
    clock.advance(LIFETIME + 1)
    with pytest.raises(MoveRefused) as expired:
        moves.take(link)
    assert expired.value.reason == "expired"
    assert not moves.moved_away(ROOM, ticket.token, None)


def test_a_link_signed_with_another_secret_is_refused(db, keys, clock, rooms, moves):
    """Another app's secret cannot make links for this one."""
    other = Moves(db, keys, Scripts(db), secret="other", clock=clock)
    ticket = rooms.join(ROOM, identity="visitor:a")
    with pytest.raises(MoveRefused):
        moves.take(other.offer(ROOM, ticket.token, "a"))


def test_rename_changes_a_live_ticket_only(rooms, reports):
    """A new name reaches the participants; an ended ticket keeps its name."""
    seated = rooms.join(ROOM, identity="visitor:a", name="Ann")
    assert rooms.rename(ROOM, seated.token, "Annie")
    assert [p.name for p in reports.participants(ROOM)] == ["Annie"]
    rooms.leave(ROOM, seated.token)
    assert not rooms.rename(ROOM, seated.token, "Anna")
    assert not rooms.rename(ROOM, "no-such-ticket", "Anna")
