"""An admission names the people it let in by the tokens their joins returned, in every
kind of room (issue 21): a script matches the two without knowing how tokens are made."""

from __future__ import annotations

import pytest

from tests.api.conftest import ADMIN


@pytest.fixture
def waitlists(app):
    return app.extensions["services"].waitlists


def admit(client, room, count, request_id=""):
    body = {"count": count, "request_id": request_id}
    response = client.post(f"/api/admin/rooms/{room}/admit", json=body, headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def joined(client, room, n, **body):
    """The tokens ``n`` joins were given, in join order."""
    tokens = []
    for i in range(n):
        email = {"email": f"fan{i}@example.com"} if body.get("email") else {}
        reply = client.post(f"/api/rooms/{room}/join", json={"name": f"P{i}", **email},
                            environ_base={"REMOTE_ADDR": f"192.0.2.{i + 1}"})  # fmt: skip
        assert reply.status_code == 200, reply.get_json()
        tokens.append(reply.get_json()["token"])
    return tokens


def test_a_live_room_admits_the_tokens_its_joins_returned(client, make_room):
    """A manual live room: the next two in line, named as their joins named them."""
    make_room("hall", capacity=5, admission_mode="manual")
    tokens = joined(client, "hall", 3)
    assert admit(client, "hall", 2, "r1") == {"admitted": tokens[:2], "replay": False}
    assert admit(client, "hall", 2, "r1") == {"admitted": tokens[:2], "replay": True}


@pytest.mark.parametrize("ordering", ["fifo", "priority"])
def test_a_waitlist_admits_the_tokens_its_joins_returned(client, make_room, waitlists, ordering):
    """A waitlist's join returns a signed token, never the bare entry id: its admission
    (and the replay of it) names the same signed tokens, not the entry ids."""
    make_room("launch", kind="waitlist", ordering=ordering)
    tokens = joined(client, "launch", 3, email=True)
    for i in range(3):
        waitlists.confirm("launch", waitlists.find("launch", f"fan{i}@example.com"))
    first = admit(client, "launch", 2, "w1")
    assert first == {"admitted": tokens[:2], "replay": False}
    assert admit(client, "launch", 2, "w1") == {"admitted": tokens[:2], "replay": True}
    position = client.get(f"/api/rooms/launch/position/{first['admitted'][0]}")
    assert position.get_json()["status"] == "admitted"  # the token opens the entry


def test_a_lottery_admits_the_tokens_its_joins_returned(client, make_room, waitlists):
    """After the draw, in the draw's order: every admitted token is one a join returned."""
    make_room("raffle", kind="waitlist", ordering="lottery")
    tokens = joined(client, "raffle", 4, email=True)
    for i in range(4):
        waitlists.confirm("raffle", waitlists.find("raffle", f"fan{i}@example.com"))
    waitlists.draw("raffle")
    admitted = admit(client, "raffle", 4)["admitted"]
    assert sorted(admitted) == sorted(tokens)
