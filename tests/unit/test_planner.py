"""The planner (issue 34): the closed form of a steady line, each queueing method, the
stock, admissions per minute and people who leave."""

from __future__ import annotations

import pytest

from webapp.domain.planner import PlanInput, shaped_arrivals, simulate, stay_points


def steady(k: float, capacity: int, stay: float) -> float:
    """The k-th in line with ``capacity`` seats and stays of ``stay`` s waits about this."""
    return (k - capacity) * stay / capacity


@pytest.mark.parametrize("cs2", [0.0, 1.0, 3.0])
def test_a_steady_line_waits_as_the_closed_form_says(cs2):
    """4,000 arrive at once at 20 seats of 60 s stays (all alike, exponential, lognormal):
    the k-th waits (k - c) * s / c, within 5%, at the median and the 90th percentile."""
    made = simulate(PlanInput(arrivals=((0, 4000),), capacity=20, stay_seconds=60, stay_cs2=cs2))
    assert made.waits.p50 == pytest.approx(steady(2000, 20, 60), rel=0.05)
    assert made.waits.p90 == pytest.approx(steady(3600, 20, 60), rel=0.05)
    assert made.served_share == pytest.approx(1.0)


def test_the_stay_points_keep_the_mean_and_the_variation():
    """The stays drawn: their mean is the mean asked for; more variation, wider spread."""
    for cs2 in (0.0, 1.0, 3.0):
        points = stay_points(60, cs2)
        assert sum(points) / len(points) == pytest.approx(60)
    assert max(stay_points(60, 3.0)) > max(stay_points(60, 1.0)) > max(stay_points(60, 0.0))


def test_the_contract_of_the_answer():
    """Waits p50 <= p90 <= p99 <= max; one row a minute; the first rows count arrivals."""
    made = simulate(PlanInput(arrivals=tuple(shaped_arrivals(600, 0.5, 300)), capacity=10,
                              stay_seconds=30))  # fmt: skip
    out = made.as_dict()
    waits = out["waits"]
    assert 0 < waits["p50"] <= waits["p90"] <= waits["p99"] <= waits["max"]
    rows = out["by_minute"]
    assert [row[0] for row in rows] == list(range(len(rows)))
    assert rows[0][1] == pytest.approx(300) and sum(row[1] for row in rows) == pytest.approx(
        600, abs=0.1
    )
    assert sum(row[2] for row in rows) == pytest.approx(600, abs=0.1)  # rounded per row
    assert set(out) >= {"waits", "by_minute", "sold_out_minute", "served_share",
                        "peak_checkins_per_second", "hosts"}  # fmt: skip
    assert out["hosts"]["app_hosts"] >= 1 and out["peak_checkins_per_second"] > 0


def test_random_order_spreads_the_waits():
    """Arrivals over five minutes: let in at random, the median wait is shorter than in
    line order (some come in at once) and the longest longer."""
    arrivals = tuple(shaped_arrivals(1000, 0.5, 300))
    fifo = simulate(PlanInput(arrivals=arrivals, capacity=10, stay_seconds=30))
    chance = simulate(PlanInput(arrivals=arrivals, capacity=10, stay_seconds=30,
                                queueing_method="random"))  # fmt: skip
    assert chance.waits.p50 < fifo.waits.p50
    assert chance.waits.max > fifo.waits.max and chance.waits.p99 > fifo.waits.p99
    assert chance.served_share == pytest.approx(1.0)


def test_passthrough_has_no_waits_and_reject_refuses_past_the_capacity():
    """Let through: nobody waits, everyone in. Refused when full: 60 arrive at once at 5
    seats, 5 are let in, 55 refused."""
    through = simulate(PlanInput(arrivals=((0, 60),), capacity=5, stay_seconds=10,
                                 queueing_method="passthrough"))  # fmt: skip
    assert through.waits.max == 0 and through.served_share == 1.0
    refused = simulate(PlanInput(arrivals=((0, 60),), capacity=5, stay_seconds=10,
                                 queueing_method="reject"))  # fmt: skip
    assert refused.refused == pytest.approx(55) and refused.served_share == pytest.approx(5 / 60)
    assert refused.waits.max == 0


def test_stock_runs_out_and_the_rest_are_not_served():
    """1,000 arrive at once for 300 units, 2 a person, 10 seats of 60 s: 150 are let in,
    at 10 a minute, so the stock runs out in minute 14."""
    made = simulate(PlanInput(arrivals=((0, 1000),), capacity=10, stay_seconds=60, stock=300,
                              units_per_admission=2))  # fmt: skip
    assert made.served_share == pytest.approx(0.15)
    assert made.sold_out_minute == 14


def test_admissions_per_minute_cap_the_pace():
    """100 seats of 10 s could let 600 a minute in; admit_per_minute 50 lets 50."""
    made = simulate(PlanInput(arrivals=((0, 500),), capacity=100, stay_seconds=10,
                              admit_per_minute=50))  # fmt: skip
    assert [round(row[2]) for row in made.by_minute[:10]] == [50] * 10
    assert made.waits.max == pytest.approx(9 * 60, abs=1)


def test_people_who_leave_shorten_the_wait_of_those_behind():
    """Half who wait leave before their turn: they take no seat, so the rest wait about
    half as long; they count as waiting until they give up."""
    base = PlanInput(arrivals=((0, 2000),), capacity=20, stay_seconds=60)
    stay = simulate(base)
    leave = simulate(PlanInput(**{**vars(base), "leave_share": 0.5, "patience_seconds": 120}))
    assert leave.waits.p90 == pytest.approx(stay.waits.p90 / 2, rel=0.05)
    assert leave.served_share == pytest.approx(0.5 + 0.5 * 20 / 2000, rel=0.02)
    assert leave.by_minute[0][3] > leave.by_minute[3][3] + 900  # leavers gone after 2 min


def test_a_long_line_is_simulated_in_longer_steps():
    """A line that would take a day at one second a step: longer steps, still the closed
    form, and at most 1,440 rows."""
    made = simulate(PlanInput(arrivals=((0, 100_000),), capacity=10, stay_seconds=60))
    assert made.step_seconds > 1 and len(made.by_minute) <= 1440
    assert made.waits.p50 == pytest.approx(steady(50_000, 10, 60), rel=0.05)
