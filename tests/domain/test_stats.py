"""The room statistics behind the wait estimates, recorded by the real engine."""

from __future__ import annotations

import pytest
from building import engine, visits_of
from busy import busy_room, turn_over
from busy import measured as rates
from recording import RecordingPublisher

from webapp.domain import estimate, pace
from webapp.domain.reports import Reports
from webapp.domain.rooms import JoinRefused


def test_release_rate_follows_a_change_of_pace(rooms, clock):
    """Seats freeing every 10 s, then every 40 s: within three TAU the rate is the new one."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=60)
    assert 1 / rates(rooms, clock).service == pytest.approx(10)
    turn_over(rooms, clock, seated, hold=40, times=45)
    assert 36 < 1 / rates(rooms, clock).service <= 40


def test_release_statistics_are_also_kept_over_hours(rooms, clock, reports):
    """The long copies forget with TAU_LONG: after a change they still hold the old pace;
    the short ones forget with TAU_SHORT: they hold the new pace alone."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=60)
    turn_over(rooms, clock, seated, hold=40, times=45)
    now = clock.now
    recent = pace.moments(reports.stats("busy"), "hold", now)
    longer = pace.moments(reports.stats("busy"), "hold.long", now, pace.TAU_LONG)
    assert longer.weight > 3 * recent.weight
    assert recent.mean > 35 and 15 < longer.mean < 30
    short = pace.moments(reports.stats("busy"), "hold.short", now, pace.TAU_SHORT)
    assert short.mean == pytest.approx(40, rel=0.01)
    for event in ("occupied", "busy"):
        assert f"{event}.long:n" in reports.stats("busy")
        assert f"{event}.short:n" in reports.stats("busy")


def test_releases_while_nobody_waits_are_no_busy_gaps(rooms, clock, reports):
    """Seats that free with an empty line measure holds, not the rate the line moves at."""
    rooms.configure("quiet", {"capacity": 2})
    for _ in range(6):
        ticket = rooms.join("quiet")
        clock.advance(30)
        rooms.leave("quiet", ticket.token)
        clock.advance(100)
    stats = reports.stats("quiet")
    assert "busy:n" not in stats
    assert stats["hold:n"] > 3
    assert stats["hold:s"] / stats["hold:n"] == pytest.approx(30)


def test_dropouts_lower_the_chance_to_stay(rooms, clock, reports):
    """People who stop checking in drop out, and the estimate expects fewer ahead to stay."""
    rooms.configure("busy", {"capacity": 1, "dropout_seconds": 20})
    seated = rooms.join("busy").token
    for _ in range(8):
        line = [rooms.join("busy").token for _ in range(2)]
        clock.advance(15)
        rooms.check_in("busy", line[0])  # the other one gave up
        clock.advance(15)
        rooms.leave("busy", seated)
        seated = rooms.check_in("busy", line[0]).token
    found = rates(rooms, clock)
    assert 0.3 < found.stay < 0.8
    assert reports.stats("busy")["abandon:n"] > 5


def test_statistics_outlive_the_engine_object(rooms, r, keys, clock):
    """The statistics are in Redis: a new process sees the same rates."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=12)
    again = Reports(engine(r, keys, clock))
    assert pace.rates(again.stats("busy"), clock.now, 1) == rates(rooms, clock)


def test_max_wait_refuses_joins_whose_estimated_wait_is_too_long(rooms, lobby, clock, reports):
    """With a seat freeing every 10 s and max_wait 25 s, the third in line is refused."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=30)
    rooms.configure("busy", {"max_wait_seconds": 25})
    assert reports.summary("busy").waiting == 1
    assert lobby.join("busy").ticket.position == 2
    with pytest.raises(JoinRefused) as refused:
        lobby.join("busy")
    assert reports.summary("busy").waiting == 2
    assert refused.value.retry_after == 10  # one must leave the line: one release


def test_retry_after_is_the_time_for_the_line_to_shorten(rooms, lobby, clock, reports):
    """A refused joiner is told to come back when enough of the line has gone in."""
    seated = busy_room(rooms, max_line_length=4)
    turn_over(rooms, clock, seated, hold=10, times=30)
    for _ in range(3):
        lobby.join("busy")
    with pytest.raises(JoinRefused) as full:
        lobby.join("busy")
    assert reports.summary("busy").waiting == 4
    assert full.value.retry_after == 10
    rooms.configure("busy", {"max_line_length": 2})
    lobby.reports.cache.forget("busy")
    with pytest.raises(JoinRefused) as fuller:
        lobby.join("busy")
    assert fuller.value.retry_after == 30  # three of the four must go in first


def test_lobby_estimate_and_poll_interval(rooms, lobby, clock):
    """A waiting visitor gets the model's wait and a poll inside half of dropout_seconds."""
    seated = busy_room(rooms, capacity=2)
    turn_over(rooms, clock, seated, hold=10, times=40)
    standing = lobby.join("busy")
    expected = estimate.wait_for(rates(rooms, clock, 2), standing.ticket.ahead)
    assert standing.raw == expected
    assert standing.estimate == expected
    assert 1.0 <= standing.poll_after <= 3600 / 2


def test_shown_figure_is_smoothed_by_whichever_process_answers(rooms, lobby, clock):
    """The figure shown travels with the client, so another process smooths it the same."""
    seated = busy_room(rooms)
    turn_over(rooms, clock, seated, hold=10, times=40)
    first = lobby.join("busy")
    assert first.shown is not None
    carried = first.shown._replace(wait=first.shown.wait * 3).dumps()
    clock.advance(5)
    other = visits_of(rooms, RecordingPublisher(), refresh=0.0, monotonic=clock)
    later = other.check_in("busy", first.ticket.token, shown=carried)
    assert later.raw is not None and later.estimate is not None
    previous = estimate.Shown.loads(carried)
    assert later.estimate.wait == pytest.approx(
        estimate.smooth(previous, later.raw, clock.now).wait
    )
    assert later.raw.wait < later.estimate.wait < previous.wait


def test_ahead_counts_who_was_let_in_first(rooms, clock, reports):
    """Of the people ahead of a joiner, the statistic counts those admitted before it."""
    rooms.configure("busy", {"capacity": 1, "dropout_seconds": 20})
    a = rooms.join("busy")
    _b, c, d = (rooms.join("busy") for _ in range(3))  # ahead at join: 0, 1, 2
    clock.advance(15)
    rooms.check_in("busy", c.token)
    rooms.check_in("busy", d.token)
    clock.advance(10)  # b missed its check-ins and dropped out
    rooms.leave("busy", a.token)
    assert rooms.check_in("busy", c.token).state == "admitted"  # 1 ahead, 0 let in first
    rooms.leave("busy", c.token)
    assert rooms.check_in("busy", d.token).state == "admitted"  # 2 ahead, 1 let in first
    stats = reports.stats("busy")
    assert stats["ahead:n"] == pytest.approx(3.0)
    assert stats["ahead:s"] == pytest.approx(1.0)


def test_each_event_is_one_field_and_the_four_it_was_kept_in_before_go(
    rooms, r, keys, clock, reports
):
    """An event's figures are one field "n s q t" in Redis (read back as <event>:n|s|q|t);
    a room that still holds an event's four old fields loses them at its next record."""
    rooms.configure("busy", {"capacity": 1})
    stats_key = keys.room("busy").stats
    old = {"hold:n": 9, "hold:s": 9, "hold:q": 9, "hold:t": 1, "hold.x:n": 5}
    r.hset(stats_key, mapping=old)
    ticket = rooms.join("busy")
    clock.advance(10)
    rooms.leave("busy", ticket.token)
    fields = r.hgetall(stats_key)
    assert "hold:n" not in fields and "hold:t" not in fields and "hold.x:n" in fields
    n, s, q, t = (float(x) for x in fields["hold"].split())
    assert (n, s, q) == (1.0, 10.0, 100.0) and t == pytest.approx(clock.now)
    stats = reports.stats("busy")
    assert (stats["hold:n"], stats["hold:s"], stats["hold:t"]) == (1.0, 10.0, t)
    assert stats["hold.long:s"] == stats["hold.short:s"] == 10.0
