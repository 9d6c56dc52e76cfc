"""Every room key keeps a TTL while the hot scripts renew TTLs only when they must
(room_lib.lua, touch()): a key made between two renewals gets its TTL when it is made."""

from __future__ import annotations

import pytest

ROOM = "ttls"
LONG = {"dropout_seconds": 3600, "grace_seconds": 10, "session_seconds": 7200}
IDLE_TTL = 172800  # room_lib.lua
RENEW_EVERY = 3600  # room_lib.lua


@pytest.fixture
def rooms(rooms):
    """The engine with the room these tests use."""
    rooms.configure(ROOM, {"capacity": 1, **LONG})
    return rooms


def assert_every_key_has_a_ttl(r, keys):
    room = keys.room(ROOM)
    for key in room.all():
        if key != room.settings and r.exists(key):
            assert r.ttl(key) > 0, key


def expires_run(r) -> int:
    return int(r.info("commandstats").get("cmdstat_expire", {}).get("calls", 0))


def test_keys_made_again_between_renewals_get_a_ttl(rooms, r, keys, clock):
    """A room emptied (its zsets and hashes gone) and used again before the next renewal
    of all: every key it makes again has a TTL."""
    a = rooms.join(ROOM, identity="v:a")
    b = rooms.join(ROOM, identity="v:b")
    rooms.leave(ROOM, a.token)
    rooms.leave(ROOM, b.token)
    clock.advance(3601)  # the ended tickets are forgotten: tickets, codes, ended go
    rooms.sweep(ROOM)
    room = keys.room(ROOM)
    assert not r.exists(room.tickets, room.line, room.seats, room.ended, room.identities)
    c = rooms.join(ROOM, identity="v:c")  # seated: seats, tickets, codes, identities
    d = rooms.join(ROOM, identity="v:d")  # in line: line, checkin, seq
    rooms.check_in(ROOM, d.token)
    rooms.leave(ROOM, c.token)
    assert_every_key_has_a_ttl(r, keys)


def test_a_plain_check_in_renews_nothing(rooms, r, clock):
    """A check-in that makes no key runs no EXPIRE until the renewal of all is due."""
    rooms.join(ROOM)
    waiter = rooms.join(ROOM)
    before = expires_run(r)
    for _ in range(5):
        clock.advance(1)
        rooms.check_in(ROOM, waiter.token)
    assert expires_run(r) == before


def test_every_key_is_renewed_once_the_renewal_is_due(rooms, r, keys, clock):
    """Past RENEW_EVERY since the last renewal, the next check-in renews every key."""
    rooms.join(ROOM)
    waiter = rooms.join(ROOM)
    room = keys.room(ROOM)
    for key in (room.line, room.tickets, room.stats):
        r.expire(key, 100)
    clock.advance(RENEW_EVERY - 10)
    rooms.check_in(ROOM, waiter.token)
    assert r.ttl(room.line) <= 100
    clock.advance(20)
    rooms.check_in(ROOM, waiter.token)
    assert r.ttl(room.line) > IDLE_TTL - 60
    assert r.ttl(room.tickets) > IDLE_TTL - 60
    assert r.ttl(room.stats) > IDLE_TTL
    assert_every_key_has_a_ttl(r, keys)


def test_a_prediction_keeps_a_ttl(rooms, r, keys):
    """The predictions hash, emptied by admissions and made again by a prediction, has
    a TTL from its first field on."""
    rooms.join(ROOM)
    waiter = rooms.join(ROOM)
    room = keys.room(ROOM)
    r.delete(room.predictions)
    rooms.predict(ROOM, waiter.token, 60.0, 30.0, 90.0)
    assert 0 < r.ttl(room.predictions) <= IDLE_TTL
