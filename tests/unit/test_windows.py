"""Check-in windows by distance from the head (webapp/domain/windows.py): the hint's
lower bound, the rule, and the poll interval that follows from it."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given

from webapp.domain import estimate, windows
from webapp.domain.pace import Rates

rates = st.builds(
    Rates,
    service=st.floats(0.001, 50.0),
    c2=st.floats(0.0, 5.0),
    cs2=st.floats(0.0, 5.0),
    stay=st.floats(0.05, 1.0),
    capacity=st.integers(1, 5000),
    rate_error=st.floats(0.0, 0.5),
    drift=st.floats(0.0, 0.01),
    moved=st.floats(0.0, 0.5),
)


@given(rates, st.integers(0, 10_000_000))
def test_hint_is_below_the_likely_earliest_admission(room, ahead):
    """low(ahead) never exceeds the estimate less its spread."""
    hint = windows.hint(room)
    if hint is None:
        assert room.rate_error + room.moved >= 1.0
        return
    low = estimate.wait_for(room, ahead).range[0]
    assert hint.low(ahead) <= low + 1e-9 * max(low, 1.0)


def test_windows_grow_from_the_head_up_to_the_cap():
    """Near the head the window is dropout_seconds, further back it grows, capped."""
    room = Rates(1.0, 1.0, 1.0, 1.0, 10, 0.01)
    hint = windows.hint(room)
    assert hint is not None
    grants = [windows.window(hint, ahead, 30, 300) for ahead in (0, 1, 10, 100, 1000, 10**6)]
    assert grants[:3] == [30, 30, 30]
    assert 30 < grants[3] < 300 and grants[4:] == [300, 300]
    assert grants == sorted(grants)


def test_without_a_hint_every_window_is_dropout():
    """No measured pace (or too uncertain a one): the rule of old."""
    assert windows.window(None, 10**6, 30, 300) == 30
    assert windows.hint(Rates(1.0, 1.0, 1.0, 1.0, 10, 0.9, moved=0.2)) is None
    assert windows.window(windows.hint(Rates(1.0, 1.0, 1.0, 1.0, 1, 0.1)), 10**6, 30, 20) == 30


def test_hint_text_round_trips():
    """The clock hash's field carries the three figures exactly, and the expiry."""
    hint = windows.Hint(1 / 3, 2 / 7, -1 / 9)
    a, b, c, until = (float(x) for x in hint.text(1_700_000_000.25).split())
    assert (a, b, c, until) == (1 / 3, 2 / 7, -1 / 9, 1_700_000_000.25)


def test_poll_after_keeps_a_margin_before_the_window_ends():
    """Far back the poll comes dropout_seconds before the window ends (issue 32); with
    the head's window, at half of it; near the head sooner still."""
    far = estimate.Estimate(10_000.0, 100.0)
    assert estimate.poll_after(30, 5000, far, 300.0) == 270.0
    assert estimate.poll_after(30, 5000, far, 45.0) == 22.5  # half: less than 30 s
    assert estimate.poll_after(30, 5000, far) == 15.0  # no window granted: dropout's half
    near = estimate.Estimate(4.0, 4.0)
    assert estimate.poll_after(30, 2, near, 30.0) == 1.0


@given(
    st.integers(1, 600),
    st.integers(0, 3000),
    st.integers(1, 10**6),
    st.one_of(st.none(), st.builds(estimate.Estimate, st.floats(0, 1e6), st.floats(0, 1e9))),
)
def test_poll_after_leaves_the_margin_and_polls_no_sooner_than_half(
    dropout, extra, position, guess
):
    """poll_after plus its margin fits the window granted; the margin is dropout_seconds
    or half the window; and the poll comes no sooner than at half the window would."""
    window = dropout + extra  # a window is never shorter than dropout_seconds
    polled = estimate.poll_after(dropout, position, guess, float(window))
    margin = estimate.poll_margin(dropout, window)
    assert margin == min(dropout, window / 2) and polled + margin <= window + 0.05
    unbounded = estimate.poll_after(dropout, position, guess, 1e12)  # no window binds
    assert polled >= min(window / 2, unbounded) - 0.05
