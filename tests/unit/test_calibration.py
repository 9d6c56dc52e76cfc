"""The estimate set by the room's own record (pure functions, no Redis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.domain import calibration
from webapp.domain.calibration import Calibration, Scored, calibrate, quantile
from webapp.domain.estimate import RECORD_MIN, Estimate
from webapp.domain.rooms import predicted

spreads = st.floats(min_value=1.0, max_value=1000.0)
misses = st.floats(min_value=0.0, max_value=10.0)


def record(misses: list[float], wait: float = 100.0, spread: float = 10.0) -> list[Scored]:
    """Admissions whose waits were ``misses`` model sd away from the model's wait."""
    return [
        Scored(float(n), wait, spread, wait + (m if n % 2 else -m) * spread)
        for n, m in enumerate(misses)
    ]


def test_a_short_record_leaves_the_model_as_it_is():
    """Under RECORD_MIN admissions scored: no calibration, the model's own figures."""
    found = calibrate(record([5.0] * (RECORD_MIN - 1)))
    assert found == calibration.NONE
    assert found.apply(Estimate(60.0, 100.0)) == Estimate(60.0, 100.0)


def test_a_model_too_sure_of_itself_shows_a_wider_range():
    """Waits two sd off, every one: the spread shown is twice the model's."""
    found = calibrate(record([2.0] * 50))
    assert found.scale == pytest.approx(2.0)
    assert found.apply(Estimate(100.0, 25.0)) == Estimate(100.0, pytest.approx(100.0))


def test_a_model_too_unsure_shows_a_narrower_range():
    """Waits a tenth of an sd off: the range narrows, down to its bound."""
    assert calibrate(record([0.1] * 50)).scale == calibration.SCALE_BOUNDS[0]


def test_admissions_without_a_spread_do_not_count():
    """A model sure to the second (sd 0) says nothing about how wide to be."""
    assert calibrate(record([1.0] * 50, spread=0.0)) == calibration.NONE


def test_the_quantile_is_the_split_conformal_one():
    """Of n values, the ceil((n + 1) * share)-th smallest; the largest beyond the end."""
    values = [float(n) for n in range(1, 11)]
    assert quantile(values, 0.7) == 8.0  # ceil(11 * 0.7) = 8
    assert quantile(values, 0.99) == 10.0
    assert quantile(values, 0.0) == 1.0


@given(st.lists(misses, min_size=RECORD_MIN, max_size=300))
def test_the_scaled_range_holds_the_share_asked_of_the_record(found: list[float]):
    """Unless a bound stops it, the scaled range would have held at least INSIDE of the
    record's waits, and not one more than the conformal quantile lets in."""
    scale = calibrate(record(found, wait=0.0, spread=1.0)).scale  # misses exact
    low, high = calibration.SCALE_BOUNDS
    assert low <= scale <= high
    held = sum(m <= scale for m in found) / len(found)
    if low < scale < high:
        assert held >= calibration.INSIDE
        assert sum(m < scale for m in found) < (len(found) + 1) * calibration.INSIDE


@given(st.lists(misses, min_size=RECORD_MIN, max_size=100), spreads, st.floats(1.0, 5000.0))
def test_the_scale_does_not_depend_on_the_units(found: list[float], spread: float, wait: float):
    """Misses counted in model sd: the same misses at any spread and wait, the same scale."""
    assert calibrate(record(found, wait, spread)).scale == pytest.approx(
        calibrate(record(found)).scale
    )


@given(st.floats(0.0, 1e5), st.floats(0.0, 1e8), st.floats(0.5, 3.0))
def test_calibration_keeps_the_wait_and_scales_the_spread(wait, variance, scale):
    """The expected wait is the model's; the spread shown is the model's times the scale."""
    shown = Calibration(scale, RECORD_MIN).apply(Estimate(wait, variance))
    assert shown.wait == wait
    assert shown.spread == pytest.approx(Estimate(wait, variance).spread * scale)


def test_a_prediction_keeps_the_models_figures_after_the_ones_shown():
    """The room keeps "wait,low,high" shown, then the model's own wait and sd."""
    assert predicted(100.0, 80.0, 120.0, None) == "100.0,80.0,120.0"
    assert predicted(100.0, 70.0, 130.0, (100.0, 20.0)) == "100.0,70.0,130.0,100.0,20.0"
