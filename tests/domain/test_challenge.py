"""Proof of work on join (issue 25): ALTCHA challenges bound to a room, expiring in
5 minutes, each solution counted once; when a room asks for one."""

from __future__ import annotations

import base64
import json

import pytest
from altcha.v1 import Challenge, Payload, solve_challenge

from webapp.domain.challenge import LIFETIME, Challenges
from webapp.domain.settings import RoomSettings

COST = 5_000


@pytest.fixture
def challenges(r, keys, clock):
    return Challenges(r, keys, "the app's secret", clock)


def solved(challenge: dict) -> str:
    """What a browser's solver sends back: the payload, base64 JSON."""
    found = Challenge(challenge["algorithm"], challenge["challenge"], challenge["maxnumber"],
                      challenge["salt"], challenge["signature"])  # fmt: skip
    solution = solve_challenge(found.challenge, found.salt, found.algorithm, found.max_number)
    assert solution is not None
    payload = Payload(found.algorithm, found.challenge, solution.number, found.salt,
                      found.signature)  # fmt: skip
    return payload.to_base64()


def test_a_solution_counts_once_and_only_in_its_room(challenges):
    """Solved: accepted once; again, or in another room: refused."""
    payload = solved(challenges.issue("hall", COST))
    assert not challenges.redeem("annex", payload)
    assert challenges.redeem("hall", payload)
    assert not challenges.redeem("hall", payload)


def test_an_expired_or_altered_solution_is_refused(challenges, clock):
    """Five minutes on, or with a changed number, salt or signature: refused."""
    payload = solved(challenges.issue("hall", COST))
    fields = json.loads(base64.b64decode(payload))
    for name, value in [("number", fields["number"] + 1), ("salt", fields["salt"] + "x"),
                        ("signature", "0" * 64), ("number", "1")]:  # fmt: skip
        bad = base64.b64encode(json.dumps({**fields, name: value}).encode()).decode()
        assert not challenges.redeem("hall", bad)
    for junk in ("", "not base64!", base64.b64encode(b"[1]").decode(), None, 5, "x" * 5000):
        assert not challenges.redeem("hall", junk)
    clock.advance(LIFETIME + 1)
    assert not challenges.redeem("hall", payload)


def test_another_secret_does_not_verify(r, keys, clock, challenges):
    """A challenge signed by another app's secret is refused."""
    other = Challenges(r, keys, "another secret", clock)
    assert not challenges.redeem("hall", solved(other.issue("hall", COST)))


def test_when_a_room_asks_for_one(challenges, rooms, clock):
    """off: never; on: always; auto: while the last minute's joins exceed the threshold."""
    rooms.configure("hall", {"capacity": 1000})
    assert not challenges.needed("hall", RoomSettings(challenge="off"))
    assert challenges.needed("hall", RoomSettings(challenge="on"))
    auto = RoomSettings(challenge="auto", challenge_threshold=5)
    for i in range(5):
        rooms.join("hall", identity=f"p{i}")
    assert not challenges.needed("hall", auto)
    rooms.join("hall", identity="p5")
    assert challenges.needed("hall", auto)
    clock.advance(120)
    assert not challenges.needed("hall", auto)
