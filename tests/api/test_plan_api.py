"""The planner's endpoint (issue 34): POST /api/admin/rooms/<room>/plan answers the
contract, starts from the room's settings, and refuses bad input with a 400."""

from __future__ import annotations

import pytest

from tests.api.conftest import ADMIN

PLAN = "/api/admin/rooms/{}/plan"


def test_a_plan_answers_the_contract(client, make_room):
    """60 arrive at once at 5 seats of 10 s (all alike): half wait 50 s or less, the last
    110 s; a row a minute; hosts and check-ins; the inputs as they were taken."""
    room = make_room("sale", capacity=5)
    body = {"arrivals": [[0, 60]], "stay_seconds": 10, "stay_cs2": 0}
    response = client.post(PLAN.format(room), json=body, headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    out = response.get_json()
    assert out["waits"] == {"p50": 50, "p90": 100, "p99": 110, "max": 110}
    assert out["by_minute"][0][:4] == [0, 60, 30, 30] and out["by_minute"][1][2] == 30
    assert out["sold_out_minute"] is None and out["served_share"] == 1
    assert out["peak_checkins_per_second"] > 0 and out["hosts"]["app_hosts"] == 1
    assert out["inputs"]["capacity"] == 5 and out["inputs"]["queueing_method"] == "fifo"


def test_a_plan_starts_from_the_rooms_settings(client, make_room):
    """Only the stays' variation given: the room's capacity, stock, admissions per minute
    and typical stay; its default arrivals (1,000 over ten minutes)."""
    room = make_room("drop", capacity=7, stock=40, admit_per_minute=20, typical_stay_seconds=60)
    out = client.post(PLAN.format(room), json={"stay_cs2": 0}, headers=ADMIN).get_json()
    taken = out["inputs"]
    assert (taken["capacity"], taken["stock"], taken["admit_per_minute"]) == (7, 40, 20)
    assert taken["stay_seconds"] == 60 and taken["arrivals_total"] == 1000
    assert out["sold_out_minute"] == 5  # 7 a minute: the 40th let in at minute 5
    assert out["served_share"] == pytest.approx(0.04)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"capacity": 0}, "capacity must be"),
        ({"capacity": "many"}, "capacity must be"),
        ({"queueing_method": "lifo"}, "queueing_method must be one of"),
        ({"arrivals": [[0]]}, "[second, count] pair"),
        ({"arrivals": [[-1, 5]]}, "second must be"),
        ({"arrivals": []}, "arrivals must be"),
        ({"shape": {"total": 10, "when": 1}}, "unknown property of shape"),
        ({"leave_share": 1.5}, "leave_share must be"),
        ({"stay_seconds": float("inf")}, "stay_seconds must be"),
        ({"colour": "red"}, "unknown property"),
        ({"shape": {"total": 10**9}}, "total must be"),
    ],
)
def test_bad_input_is_a_400_that_says_what(client, make_room, body, words):
    """Each wrong input: a 400 whose error names it; never a 500."""
    room = make_room("sale", capacity=5)
    response = client.post(PLAN.format(room), json=body, headers=ADMIN)
    assert response.status_code == 400, response.get_json()
    assert words in response.get_json()["error"]


def test_a_plan_needs_the_token_and_a_room(client):
    """Without the token: 401; an unknown room: 404."""
    assert client.post(PLAN.format("nowhere")).status_code == 401
    assert client.post(PLAN.format("nowhere"), headers=ADMIN).status_code == 404


def test_each_queueing_method(client, make_room):
    """Refused when full: 55 of 60 turned away; let through: nobody waits."""
    room = make_room("sale", capacity=5)
    body = {"arrivals": [[0, 60]], "stay_seconds": 10}
    reject = client.post(PLAN.format(room), json={**body, "queueing_method": "reject"},
                         headers=ADMIN).get_json()  # fmt: skip
    assert reject["refused"] == 55 and reject["waits"]["max"] == 0
    through = client.post(PLAN.format(room), json={**body, "queueing_method": "passthrough"},
                          headers=ADMIN).get_json()  # fmt: skip
    assert through["served_share"] == 1 and through["waits"]["max"] == 0
