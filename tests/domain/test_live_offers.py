"""Live rooms tell a waiter who gave an email that a seat is offered (issue 13): one
``offered`` message in the room's outbox, written by the script that offers the seat.
Runs on a single Redis and on a Redis Cluster (the `db` fixture)."""

from __future__ import annotations

import pytest

from webapp.redis.replies import texts

ROOM = "lobby"


@pytest.fixture
def client(db):
    return db


@pytest.fixture
def rooms(rooms):
    """The engine with the room these tests use."""
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 30, "session_seconds": 300})
    return rooms


def outbox(db, keys):
    return [texts(fields) for _, fields in db.xrange(keys.room(ROOM).outbox)]


def test_offer_to_a_ticket_with_an_email_writes_one_notice(rooms, db, keys, clock):
    seated = rooms.join(ROOM, name="first")
    waiter = rooms.join(ROOM, name="Ada", email="ada@example.org", lang="de")
    assert waiter.state == "waiting"
    assert outbox(db, keys) == []
    rooms.leave(ROOM, seated.token)
    offered = rooms.check_in(ROOM, waiter.token)
    rooms.check_in(ROOM, waiter.token)  # claimed: no second notice
    assert offered.state in ("offered", "admitted")
    [notice] = outbox(db, keys)
    assert notice["kind"] == "offered"
    assert notice["entry"] == waiter.token
    assert (notice["email"], notice["name"], notice["lang"]) == ("ada@example.org", "Ada", "de")
    assert float(notice["until"]) == pytest.approx(float(notice["at"]) + 30)
    assert db.ttl(keys.room(ROOM).outbox) > 0


def test_offer_without_an_email_writes_nothing(rooms, db, keys):
    seated = rooms.join(ROOM, name="first")
    waiter = rooms.join(ROOM, name="Bo")
    rooms.leave(ROOM, seated.token)
    rooms.check_in(ROOM, waiter.token)
    assert not db.exists(keys.room(ROOM).outbox)


def test_set_and_remove_the_email_of_a_waiting_ticket(rooms, db, keys, reports):
    seated = rooms.join(ROOM, name="first")
    waiter = rooms.join(ROOM, name="Cy")
    assert rooms.set_email(ROOM, waiter.token, "cy@example.org", "es")
    assert reports.email_of(ROOM, waiter.token) == "cy@example.org"
    assert rooms.set_email(ROOM, waiter.token, "")
    assert reports.email_of(ROOM, waiter.token) == ""
    assert not rooms.set_email(ROOM, seated.token, "x@example.org")  # not waiting
    assert rooms.set_email(ROOM, waiter.token, "cy@example.org", "es")
    rooms.leave(ROOM, seated.token)
    rooms.check_in(ROOM, waiter.token)
    [notice] = outbox(db, keys)
    assert (notice["email"], notice["lang"]) == ("cy@example.org", "es")


def test_admin_admitting_one_ticket_tells_it(rooms, db, keys):
    rooms.configure(ROOM, {"admission_mode": "manual"})
    rooms.join(ROOM, name="first")
    waiter = rooms.join(ROOM, name="Di", email="di@example.org", lang="en")
    rooms.admit(ROOM, 1, override=True, token=waiter.token)
    assert [n["entry"] for n in outbox(db, keys)] == [waiter.token]
