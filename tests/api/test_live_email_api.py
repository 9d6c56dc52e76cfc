"""A live room's join takes an optional email (issue 13): stored on the ticket, told by
the outbox when a seat is offered; a bad address is refused and changes nothing."""

from __future__ import annotations

import json

from webapp.redis.keys import Keys


def tickets(r):
    raw = r.hgetall(Keys().room("lobby").tickets)
    return {k: json.loads(v) for k, v in raw.items()}


def test_live_join_stores_the_email_and_the_offer_is_mailed(client, make_room, r):
    make_room(capacity=1)
    first = client.post("/api/rooms/lobby/join", json={"name": "First"}).get_json()
    reply = client.post(
        "/api/rooms/lobby/join",
        json={"name": "Ada", "email": "Ada@Example.org"},
        headers={"Accept-Language": "de"},
    )
    assert reply.status_code == 200
    token = reply.get_json()["token"]
    assert tickets(r)[token]["em"] == "Ada@example.org"
    assert tickets(r)[token]["lg"] == "de"
    client.post(f"/api/rooms/lobby/leave/{first['token']}")
    client.get(f"/api/rooms/lobby/position/{token}")
    [(_, fields)] = r.xrange(Keys().room("lobby").outbox)
    assert fields["kind"] == "offered" and fields["entry"] == token


def test_live_join_with_a_bad_email_is_refused(client, make_room, r):
    make_room(capacity=1)
    reply = client.post("/api/rooms/lobby/join", json={"name": "Bo", "email": "not-an-email"})
    assert reply.status_code == 400
    assert "error" in reply.get_json()
    assert tickets(r) == {}
