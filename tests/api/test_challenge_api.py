"""The JSON API's proof of work (issues 25 and 29): GET .../challenge (an ALTCHA v2
challenge, PBKDF2/SHA-256), a join carrying "altcha", and 403 challenge_required
(nothing changed) without one or with a bad one."""

from __future__ import annotations

import base64
import json

import pytest
from building import solved


def qsize(client, room):
    return client.get(f"/api/rooms/{room}/qsize").get_json()["len"]


def test_a_join_without_a_solution_is_403_with_a_challenge(client, make_room):
    """Missing, wrong, or another room's: 403 challenge_required; nobody joined."""
    make_room("hall", capacity=1, admission_mode="manual", challenge="on", challenge_cost=100)
    make_room("annex", capacity=1, admission_mode="manual", challenge="on", challenge_cost=100)
    other = solved(client.get("/api/rooms/annex/challenge").get_json())
    for body in ({}, {"altcha": "nonsense"}, {"altcha": other}):  # not text: 400, below
        reply = client.post("/api/rooms/hall/join", json=body)
        assert reply.status_code == 403
        found = reply.get_json()
        assert found["error"] == "challenge_required"
        assert found["challenge"]["maxnumber"] == 100
        assert set(found["challenge"]) == {"parameters", "signature", "maxnumber"}
        assert found["challenge"]["parameters"]["algorithm"] == "PBKDF2/SHA-256"
    assert qsize(client, "hall") == 0


def test_a_solution_with_another_key_is_refused(client, make_room):
    """A payload whose derived key or counter is not the challenge's: 403; the right
    one then joins."""
    make_room("hall", capacity=1, admission_mode="manual", challenge="on", challenge_cost=100)
    payload = solved(client.get("/api/rooms/hall/challenge").get_json())
    fields = json.loads(base64.b64decode(payload))
    key = fields["solution"]["derivedKey"]
    wrong = "0" * 64 if key[0] != "0" else "f" * 64
    counter = fields["solution"]["counter"]
    for solution in ({**fields["solution"], "derivedKey": wrong},
                     {"counter": counter + 1, "derivedKey": wrong}):  # fmt: skip
        bad = base64.b64encode(json.dumps({**fields, "solution": solution}).encode()).decode()
        assert client.post("/api/rooms/hall/join", json={"altcha": bad}).status_code == 403
    assert qsize(client, "hall") == 0
    assert client.post("/api/rooms/hall/join", json={"altcha": payload}).status_code == 200


def test_a_solved_challenge_joins_once(client, make_room):
    """Solved: 200; the same solution again: 403; an Idempotency-Key re-join needs none."""
    make_room("hall", capacity=1, admission_mode="manual", challenge="on", challenge_cost=100)
    reply = client.get("/api/rooms/hall/challenge")
    assert reply.status_code == 200 and reply.headers["Cache-Control"] == "no-store"
    payload = solved(reply.get_json())
    key = {"Idempotency-Key": "k-1"}
    assert (
        client.post("/api/rooms/hall/join", json={"altcha": payload}, headers=key).status_code
        == 200
    )
    again = client.post("/api/rooms/hall/join", json={"altcha": payload})
    assert again.status_code == 403
    assert client.post("/api/rooms/hall/join", json={}, headers=key).status_code == 200
    assert qsize(client, "hall") == 1


def test_an_expired_challenge_is_refused(client, make_room, clock):
    """Solved after its 5 minutes: 403."""
    make_room("hall", capacity=1, admission_mode="manual", challenge="on", challenge_cost=100)
    payload = solved(client.get("/api/rooms/hall/challenge").get_json())
    clock.advance(301)
    assert client.post("/api/rooms/hall/join", json={"altcha": payload}).status_code == 403
    data = json.loads(base64.b64decode(payload))["challenge"]["parameters"]["data"]
    assert data == {"room": "hall", "expires": 1_700_000_000 + 300}


def test_auto_asks_only_past_the_threshold(client, make_room):
    """challenge auto, threshold 2: joins are free until more than 2 joined in the last
    minute, then 403 until solved."""
    make_room("hall", capacity=1, admission_mode="manual", challenge="auto", challenge_threshold=2)
    codes = [client.post("/api/rooms/hall/join", json={}).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 403]


def test_auto_asks_more_work_while_many_join(client, make_room):
    """challenge auto, threshold 2, cost 100: past the threshold the challenge asks
    the cost times the last minute's joins over the threshold; a solved one joins."""
    make_room("hall", capacity=1, admission_mode="manual", challenge="auto",
              challenge_threshold=2, challenge_cost=100)  # fmt: skip
    for _ in range(3):
        assert client.post("/api/rooms/hall/join", json={}).status_code == 200
    refused = client.post("/api/rooms/hall/join", json={})
    assert refused.status_code == 403 and refused.get_json()["challenge"]["maxnumber"] == 150
    for joined in (3, 4, 5):  # each solved join raises the next one's work
        challenge = client.get("/api/rooms/hall/challenge").get_json()
        assert challenge["maxnumber"] == joined * 50
        assert (
            client.post("/api/rooms/hall/join", json={"altcha": solved(challenge)}).status_code
            == 200
        )


@pytest.mark.parametrize("altcha", [5, ["x"], {"a": 1}, "x" * 2049])
@pytest.mark.parametrize("challenge", ["off", "on"])
def test_a_bad_altcha_is_a_400_whether_asked_or_not(client, make_room, altcha, challenge):
    """Not text, or over 2,048 characters: 400 and no place, in a room that asks for a
    puzzle and in one that does not (schemathesis found the second taking it)."""
    make_room("hall", capacity=1, admission_mode="manual", challenge=challenge)
    reply = client.post("/api/rooms/hall/join", json={"altcha": altcha})
    assert reply.status_code == 400 and "altcha" in reply.get_json()["error"]
    assert client.get("/api/rooms/hall/qsize").get_json()["len"] == 0


def test_off_asks_nothing_and_unknown_rooms_are_404(client, make_room):
    make_room("hall", capacity=1, admission_mode="manual")
    assert client.post("/api/rooms/hall/join", json={}).status_code == 200
    assert client.get("/api/rooms/nowhere/challenge").status_code == 404
