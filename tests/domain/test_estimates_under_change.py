"""Wait estimates when the pace changes, with the real engine and time under control."""

from __future__ import annotations

from itertools import pairwise

import pytest
from building import lobby_of, visits_of
from busy import busy_room, turn_over
from recording import RecordingPublisher

from webapp.domain import calibration, estimate, pace, room_cache
from webapp.domain.rooms import predicted


def test_busy_releases_are_counted_per_seat(rooms, clock, reports):
    """Two seats freeing one every 10 s: 20 seat-seconds per release, whatever the capacity."""
    seated = busy_room(rooms, capacity=2)
    turn_over(rooms, clock, seated, hold=10, times=30)
    stats = reports.stats("busy")
    assert stats["busy:s"] / stats["busy:n"] == pytest.approx(20)
    rates = pace.rates(stats, clock.now, 2)
    assert rates is not None
    assert rates.service == pytest.approx(2 / 20)


def test_halved_capacity_changes_the_next_check_in(rooms, clock, reports):
    """The admin halves the capacity: the next check-in's estimate is for the new one (a
    release rate per seat times the new capacity, after the excess seats free up), even
    in a process that would not read the settings again for an hour; and it says the
    line has slowed down."""
    seated = busy_room(rooms, capacity=2)
    turn_over(rooms, clock, seated, hold=10, times=60)
    visits = visits_of(rooms, RecordingPublisher(), refresh=3600.0, monotonic=clock)
    lobby = visits.lobby
    for _ in range(5):
        lobby.join("busy")
    mine = lobby.join("busy")
    assert mine.raw is not None and mine.ticket.ahead == 6
    clock.advance(1)
    rooms.configure("busy", {"capacity": 1})
    assert mine.shown is not None
    later = visits.check_in("busy", mine.ticket.token, shown=mine.shown.dumps())
    assert later.trend == "slower"
    found = pace.rates(reports.stats("busy"), clock.now, 1)
    assert found is not None and later.raw is not None
    assert later.raw == estimate.wait_for(found, 6, seated=2)
    # 20 seat-seconds per release: 7 releases 10 s apart at two seats; at one, 20 s
    # apart, after one of the two seated leaves (10 s, two seats releasing).
    assert mine.raw.wait == pytest.approx(7 * 10, rel=0.05)
    assert later.raw.wait == pytest.approx(10 + 7 * 20, rel=0.05)


def test_a_slower_line_says_so(rooms, clock):
    """Seats that freed every 10 s now free every 40 s: the figure shown to a waiting
    visitor grows, and while it does the standing says the line has slowed down (to the
    page and the API); once the line keeps its new pace, it says nothing."""
    seated = busy_room(rooms, capacity=1, waiting=30)
    turn_over(rooms, clock, seated, hold=10, times=120)
    visits = visits_of(rooms, RecordingPublisher(), refresh=0.0, monotonic=clock)
    lobby = visits.lobby
    mine = lobby.join("busy")
    assert mine.shown is not None and mine.trend is None
    shown, told = mine.shown, []
    for _ in range(8):
        turn_over(rooms, clock, seated, hold=40, times=1)
        later = visits.check_in("busy", mine.ticket.token, shown=shown.dumps())
        assert later.shown is not None and later.ticket.state == "waiting"
        told.append((later.shown.wait, later.trend))
        shown = later.shown
    rose = [trend for (before, _), (figure, trend) in pairwise(told) if figure > before]
    assert rose and all(trend == "slower" for trend in rose)
    assert "faster" not in [trend for _, trend in told]
    assert told[-1][1] is None  # the figure counts down at the new pace


def scored_record(rooms, visits, clock, model, waited, room="hall", count=25):
    """``count`` admissions from the line of ``room``, each predicted at its join with
    the model's ``model`` (wait, sd) and admitted after ``waited`` seconds."""
    rooms.configure(room, {"capacity": 1, "dropout_seconds": 3600})
    seated = rooms.join(room).token
    waiting = [rooms.join(room).token for _ in range(count)]
    for token in waiting:
        rooms.predict(room, token, model[0], model[0] - model[1], model[0] + model[1], model)
    for token in waiting:
        clock.advance(waited)
        visits.end(room, seated)
        seated = token


def test_a_room_whose_waits_strayed_widens_the_range(rooms, visits, reports, clock):
    """Waits 100 s and over where the model said 10 s give or take 5: the range shown
    is widened to its bound, the expected wait and the poll interval left as the
    model's; the process reads the record again only after RECORD_REFRESH."""
    scored_record(rooms, visits, clock, (10.0, 5.0), waited=100)
    found = reports.scored("hall", clock.now, 3600, calibration.RECORD_COUNT)
    assert len(found) == 25 and found[0] == (clock.now, 10.0, 5.0, pytest.approx(2500))
    lobby = lobby_of(rooms, refresh=0.0, monotonic=clock)
    high = calibration.SCALE_BOUNDS[1]
    assert lobby.reports.cache.calibration("hall", lobby.reports.now()).scale == high
    mine = lobby.join("hall")
    assert mine.raw is not None and mine.model is not None
    assert mine.raw.wait == mine.model.wait
    assert mine.raw.spread == pytest.approx(high * mine.model.spread)
    ticket = mine.ticket  # polls follow the model's range: as many check-ins as before
    assert mine.poll_after == estimate.poll_after(3600, ticket.position, mine.model, ticket.window)
    rooms.client.delete(rooms.room_keys("hall").accuracy)
    clock.advance(room_cache.RECORD_REFRESH - 1)
    assert (
        lobby.reports.cache.calibration("hall", lobby.reports.now()).scale == high
    )  # kept by the process
    clock.advance(1)
    assert lobby.reports.cache.calibration("hall", lobby.reports.now()) == calibration.NONE


def test_a_record_without_the_models_figures_calibrates_nothing(rooms, visits, lobby, clock):
    """Predictions kept as "wait,low,high" alone (before the model's figures were
    kept): the model as it is."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 3600})
    seated = rooms.join("hall").token
    waiting = [rooms.join("hall").token for _ in range(25)]
    for token in waiting:
        rooms.predict("hall", token, 10.0, 5.0, 15.0)
    for token in waiting:
        clock.advance(200)
        lobby.rooms.leave("hall", seated)
        seated = token
    assert lobby.reports.cache.calibration("hall", lobby.reports.now()) == calibration.NONE


def test_a_join_keeps_the_models_figures_for_the_record(rooms, visits, clock):
    """A joiner's prediction is kept with the model's own wait and sd after the figures
    shown."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=30)
    mine = visits.join("busy")
    assert mine.raw is not None and mine.model is not None
    kept = rooms.client.hget(rooms.room_keys("busy").predictions, mine.ticket.token)
    low, high = mine.raw.range
    assert kept == predicted(mine.raw.wait, low, high, (mine.model.wait, mine.model.spread))
    assert len(kept.split(",")) == 5
