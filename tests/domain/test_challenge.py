"""Proof of work on join (issues 25 and 29): ALTCHA v2 challenges (PBKDF2/SHA-256) bound
to a room, expiring in 5 minutes, each solution counted once; when a room asks for one."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest
from building import solved
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.domain.challenge import AUTO_MOST, ITERATIONS, LIFETIME, Challenges, scaled_cost
from webapp.domain.refusals import PuzzleAsked
from webapp.domain.settings import RoomSettings

COST = 100


@pytest.fixture
def challenges(r, keys, clock):
    return Challenges(r, keys, "the app's secret", clock)


def test_a_solution_counts_once_and_only_in_its_room(challenges):
    """Solved: accepted once; again, or in another room: refused."""
    payload = solved(challenges.issue("hall", COST))
    assert not challenges.redeem("annex", payload)
    assert challenges.redeem("hall", payload)
    assert not challenges.redeem("hall", payload)


def test_a_challenge_is_a_key_derivation_whose_counter_is_at_most_the_cost(challenges):
    """The challenge: PBKDF2/SHA-256 of ITERATIONS rounds, the key's first half given,
    bound to its room, expiring in five minutes; its counter is at most the cost."""
    made = challenges.issue("hall", COST)
    parameters = made["parameters"]
    assert parameters["algorithm"] == "PBKDF2/SHA-256" and parameters["cost"] == ITERATIONS
    assert len(parameters["keyPrefix"]) == 32 and parameters["keySignature"]
    assert parameters["data"] == {"room": "hall", "expires": 1_700_000_000 + LIFETIME}
    assert made["maxnumber"] == COST
    counter = json.loads(base64.b64decode(solved(made)))["solution"]["counter"]
    assert 0 <= counter <= COST


def test_an_expired_or_altered_solution_is_refused(challenges, clock):
    """Five minutes on, or with a changed counter, key, parameter or signature: refused."""
    payload = solved(challenges.issue("hall", COST))
    fields = json.loads(base64.b64decode(payload))
    challenge, solution = fields["challenge"], fields["solution"]
    parameters = challenge["parameters"]
    wrong = "0" * 64 if solution["derivedKey"][0] != "0" else "f" * 64
    for changed in (
        {"solution": {**solution, "derivedKey": wrong}},
        {"solution": {"counter": solution["counter"] + 1, "derivedKey": wrong}},
        {"solution": {**solution, "counter": "1"}},
        {"challenge": {**challenge, "signature": "0" * 64}},
        {"challenge": {**challenge, "parameters": {**parameters, "cost": 1}}},
        {"challenge": {**challenge, "parameters": {**parameters, "keySignature": None}}},
        {"challenge": {**challenge, "parameters": {**parameters,
                                                   "data": {"room": "hall", "expires": 2**40}}}},
    ):  # fmt: skip
        bad = base64.b64encode(json.dumps({**fields, **changed}).encode()).decode()
        assert not challenges.redeem("hall", bad)
    for junk in ("", "not base64!", base64.b64encode(b"[1]").decode(), None, 5, "x" * 5000,
                 base64.b64encode(b'{"challenge": [], "solution": {}}').decode()):  # fmt: skip
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


@pytest.mark.parametrize(
    ("recent", "threshold", "cost"),
    [(0, 600, 100_000), (600, 600, 100_000), (900, 600, 150_000), (6_000, 600, 1_000_000),
     (60_000, 600, 1_600_000), (5, 0, 500_000)],
)  # fmt: skip
def test_auto_asks_more_work_the_busier_the_room(recent, threshold, cost):
    """The base work times the rate over the threshold, from 1 to AUTO_MOST times."""
    assert scaled_cost(100_000, recent, threshold) == cost
    assert AUTO_MOST == 16


def test_the_cost_a_room_asks_now(challenges, rooms, clock):
    """on: the base work whatever the rate; auto: scaled by the last minute's joins."""
    rooms.configure("hall", {"capacity": 1000})
    on = RoomSettings(challenge="on", challenge_cost=2_000, challenge_threshold=4)
    auto = dataclasses.replace(on, challenge="auto")
    assert challenges.cost("hall", on) == challenges.cost("hall", auto) == 2_000
    for i in range(10):
        rooms.join("hall", identity=f"p{i}")
    assert challenges.cost("hall", on) == 2_000
    assert challenges.cost("hall", auto) == 5_000  # 10 joins over 4: 2.5 times
    assert challenges.issue("hall", challenges.cost("hall", auto))["maxnumber"] == 5_000
    clock.advance(120)  # the minute is over: the base again
    assert challenges.cost("hall", auto) == 2_000


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    this=st.integers(0, 40),
    last=st.integers(0, 40),
    second=st.floats(0, 59.999),
    threshold=st.integers(0, 50),
)
def test_the_join_asks_the_auto_puzzle_as_challenges_needed_says(
    challenges, rooms, r, keys, clock, this, last, second, threshold
):
    """Under auto a join without a solution is asked the puzzle by its own script call
    (one round trip): exactly when ``Challenges.needed`` would ask it, for any last two
    minutes of joins at any second of the minute; refused, it takes no place and
    counts no join."""
    clock.now = 60 * 28_333_333 + second
    minute = 28_333_333
    history = keys.room("hall").history
    r.delete(history)
    rooms.configure("hall", {"capacity": 1000})
    r.hset(history, mapping={f"{minute}:joined": this, f"{minute - 1}:joined": last})
    asked = challenges.needed("hall", RoomSettings(challenge="auto", challenge_threshold=threshold))
    try:
        rooms.join("hall", puzzle_above=threshold)
    except PuzzleAsked:
        assert asked
        assert int(r.hget(history, f"{minute}:joined") or 0) == this  # counted nowhere
    else:
        assert not asked
        assert int(r.hget(history, f"{minute}:joined") or 0) == this + 1
