"""The wait estimator against closed-form cases (pure functions, no Redis)."""

from __future__ import annotations

import math

import pytest

from webapp.domain import estimate, pace
from webapp.domain.estimate import Estimate, Shown
from webapp.domain.pace import Rates

LONG = ((pace.LONG, 1.0),)


def room(service=0.5, c2=1.0, cs2=None, stay=1.0, capacity=1, rate_error=0.0) -> Rates:
    return Rates(service, c2, c2 if cs2 is None else cs2, stay, capacity, rate_error)


def test_deterministic_service_has_no_variance():
    """One seat with a fixed holding time: the wait is (ahead + 1) holds, exactly."""
    guess = estimate.wait_for(room(service=0.5, c2=0.0), ahead=4)
    assert guess == Estimate(10.0, 0.0)


@pytest.mark.parametrize("capacity", [1, 5, 50])
@pytest.mark.parametrize("ahead", [0, 3, 40])
def test_poisson_departures_give_variance_mean_squared_over_releases(capacity, ahead):
    """Exponential holds: J releases of a Poisson stream, variance = mean**2 / J."""
    guess = estimate.wait_for(room(service=2.0, c2=1.0, capacity=capacity), ahead)
    releases = ahead + 1
    assert guess.wait == pytest.approx(releases / 2.0)
    assert guess.variance == pytest.approx(guess.wait**2 / releases)


def test_erlang_count_of_releases():
    """A sum of J gaps with squared variation c2 has variance J * c2 / rate**2."""
    guess = estimate.wait_after(count_mean=9, count_var=0, service=3.0, c2=0.25)
    assert guess == Estimate(pytest.approx(3.0), pytest.approx(9 * 0.25 / 9))


def test_nobody_drops_out_when_everyone_stays():
    """Without dropouts the visitor waits for everyone ahead and then one more release."""
    assert estimate.releases(7, stay=1.0) == (8.0, 0.0)


def test_people_ahead_who_stay_are_a_binomial():
    """Each of the k ahead is admitted with probability stay: mean k p, variance k p (1-p)."""
    assert estimate.releases(40, stay=0.75) == (1 + 30.0, 40 * 0.75 * 0.25)


def test_dropouts_shorten_the_wait():
    """The more people ahead give up, the fewer seat releases a visitor waits for."""
    waits = [estimate.wait_for(room(stay=p), 100).wait for p in (1.0, 0.9, 0.5)]
    assert waits[0] > waits[1] > waits[2] > 0


def test_parallel_seats_release_like_their_gaps_at_first_and_in_the_long_run_later():
    """Over a few releases the gaps' variability counts; over many, the long-run one."""
    long_run = pace.long_run_c2(4.0, capacity=10)
    assert estimate.departure_c2(1.0, 4.0, capacity=1000, count=1) == pytest.approx(1, abs=0.01)
    assert estimate.departure_c2(1.0, 4.0, capacity=10, count=1e6) == pytest.approx(
        long_run, abs=0.01
    )
    assert estimate.departure_c2(1.0, 4.0, capacity=10, count=10) == pytest.approx(
        (1 + long_run) / 2
    )


@pytest.mark.parametrize("cs2", [0.0, 0.5, 1.0, 4.0])
def test_one_seat_releases_as_variably_as_its_holds(cs2):
    """A single seat's releases are a renewal process of its holds: cs2 in the long run."""
    assert pace.long_run_c2(cs2, capacity=1) == pytest.approx(cs2)


def test_many_seats_release_closer_to_poisson_than_their_holds():
    """QNA's departure formula: 1 + (cs2 - 1) / sqrt(N), so N = 25 keeps a fifth of it."""
    assert pace.long_run_c2(6.0, capacity=25) == pytest.approx(2.0)
    assert pace.long_run_c2(0.0, capacity=100) == pytest.approx(0.9)
    assert pace.long_run_c2(1.0, capacity=100) == 1.0


def test_estimating_the_rate_adds_variance():
    """A rate measured from few releases makes the range wider, not the mean longer."""
    sure = estimate.wait_for(room(rate_error=0.0), 20)
    unsure = estimate.wait_for(room(rate_error=0.1), 20)
    assert unsure.wait == sure.wait
    assert unsure.variance == pytest.approx(sure.variance + sure.wait**2 / 10)


def stats(**values: float) -> dict[str, float]:
    return {key.replace("_", ":"): value for key, value in values.items()}


def test_rates_from_statistics():
    """Busy gaps and holds / N combined by precision; stay from the line time of the admitted."""
    figures = stats(
        hold_n=100, hold_s=6000, hold_q=100 * (60**2 + 30**2), hold_t=1000,
        busy_n=50, busy_s=50 * 80, busy_q=50 * 32 * 20**2, busy_t=1000,
        abandon_n=10, abandon_s=500, abandon_t=1000,
        waited_n=90, waited_s=9500, waited_t=1000,
    )  # fmt: skip
    rates = pace.rates(figures, now=1000, capacity=20)
    assert rates is not None
    cs2 = (100 * 0.25 + pace.PRIOR_WEIGHT) / (100 + pace.PRIOR_WEIGHT)
    long_run = pace.long_run_c2(cs2, 20)
    # 80 seat-seconds per busy release: a gap of 4 s at 20 seats; their c2 is 16 / 4**2 = 1
    by_holds, by_gaps = 100 / cs2, 50 / 1.0
    assert 1 / rates.service == pytest.approx((3 * by_holds + 4 * by_gaps) / (by_holds + by_gaps))
    assert (rates.c2, rates.cs2) == (pytest.approx(1.0), pytest.approx(cs2))
    assert rates.stay == pytest.approx(9500 / 10_000)
    assert rates.rate_error == pytest.approx(long_run / 200)


def test_rate_from_holds_before_anyone_waited():
    """Without releases seen while people waited, a full room of N frees N per mean hold."""
    figures = stats(hold_n=100, hold_s=6000, hold_q=360_000 + 90_000, hold_t=0)
    rates = pace.rates(figures, now=0, capacity=20)
    assert rates is not None
    assert rates.service == pytest.approx(20 / 60)
    assert rates.c2 == 1.0


def test_rates_decay_to_now():
    """Statistics last updated one time constant ago weigh e**-1 of what they did."""
    figures = stats(hold_n=100, hold_s=6000, hold_q=360_000, hold_t=0)
    rates = pace.rates(figures, now=pace.TAU, capacity=1)
    assert rates is not None
    assert rates.rate_error == pytest.approx(rates.cs2 / (2 * 100 / math.e))
    assert rates.service == pytest.approx(1 / 60)


def hour_of_holds(mean: float, long_mean: float) -> dict[str, float]:
    """Recent (TAU) and long (TAU_LONG) hold statistics of exponential-like holds."""
    recent, longer = 100.0, 600.0
    return {
        "hold:n": recent, "hold:s": recent * mean, "hold:q": recent * 2 * mean**2,
        "hold:t": 0.0, "hold.long:n": longer, "hold.long:s": longer * long_mean,
        "hold.long:q": longer * 2 * long_mean**2, "hold.long:t": 0.0,
    }  # fmt: skip


def test_a_steady_pace_is_measured_over_the_longer_window():
    """Both windows agree within noise: the longer one's rate; its error is the longer
    one's and the windows' squared difference (small changes of pace look like noise)."""
    figures = hour_of_holds(mean=62.0, long_mean=60.0)
    rates = pace.rates(figures, now=0, capacity=20)
    recent = pace.releases_seen(figures, now=0, capacity=20)
    longer = pace.releases_seen(figures, 0, 20, LONG)
    assert rates is not None and recent is not None and longer is not None
    assert 1 / rates.service == pytest.approx(3.0, rel=0.005)
    shift = math.log(60 / 62)
    assert rates.rate_error == pytest.approx(longer.error + shift**2, rel=0.01)
    assert rates.rate_error < recent.error / 2


def test_a_change_of_pace_is_the_recent_windows_alone():
    """The recent holds are twice the last hour's: far beyond noise, the recent rate."""
    rates = pace.rates(hour_of_holds(mean=120.0, long_mean=60.0), now=0, capacity=20)
    recent = pace.releases_seen(hour_of_holds(120.0, 60.0), now=0, capacity=20)
    assert rates is not None and recent is not None
    assert 1 / rates.service == pytest.approx(6.0, rel=0.001)
    assert rates.rate_error == pytest.approx(recent.error, rel=0.01)


def test_without_a_long_window_the_recent_one_counts():
    """Statistics written before the long copies existed: the recent window as it is."""
    figures = {k: v for k, v in hour_of_holds(60.0, 60.0).items() if ".long" not in k}
    rates = pace.rates(figures, now=0, capacity=20)
    recent = pace.releases_seen(figures, now=0, capacity=20)
    assert rates is not None and recent is not None
    assert (20 / rates.service, rates.rate_error) == (recent.turn, recent.error)


def test_unknown_until_enough_holds():
    """With fewer finished holds than MIN_HOLDS the wait is unknown (null)."""
    few = stats(hold_n=pace.MIN_HOLDS - 1, hold_s=240, hold_q=14400, hold_t=0)
    assert pace.rates(few, now=0, capacity=4) is None
    assert pace.rates({}, now=0, capacity=4) is None


def test_markovian_default_for_cs2_until_samples_accumulate():
    """Few holds: cs2 stays near 1 whatever they measured."""
    constant = stats(hold_n=5, hold_s=300, hold_q=5 * 3600, hold_t=0)
    rates = pace.rates(constant, now=0, capacity=1)
    assert rates is not None
    assert rates.cs2 == pytest.approx(pace.PRIOR_WEIGHT / (5 + pace.PRIOR_WEIGHT))


def test_everyone_stays_until_enough_line_exits():
    """Until MIN_LINE_EXITS people left the line, nobody is assumed to drop out."""
    figures = stats(hold_n=50, hold_s=3000, hold_q=50 * 7200, hold_t=0, abandon_n=2,
                    abandon_s=20, abandon_t=0)  # fmt: skip
    rates = pace.rates(figures, now=0, capacity=2)
    assert rates is not None
    assert rates.stay == 1.0


@pytest.mark.parametrize("max_wait", [1, 30, 300, 3600, 86400])
@pytest.mark.parametrize("stay", [1.0, 0.3])
def test_max_ahead_is_the_last_line_length_within_max_wait(max_wait, stay):
    """Admission control refuses exactly the joiners whose estimated wait exceeds max_wait."""
    rates = room(service=0.25, stay=stay, capacity=10, rate_error=0.005)
    most = estimate.max_ahead_for(rates, max_wait)
    assert most is not None
    if most >= 0:
        assert estimate.wait_for(rates, most).wait <= max_wait
    if most < estimate.MAX_AHEAD:
        assert estimate.wait_for(rates, most + 1).wait > max_wait


def test_max_ahead_refuses_everyone_or_nobody():
    """-1 when even the head would wait too long; None when the wait is unknown."""
    assert estimate.max_ahead_for(room(service=0.01), max_wait=60) == -1
    assert estimate.max_ahead_for(None, max_wait=60) is None


def test_poll_is_long_far_back_and_short_near_the_head():
    """The poll interval grows with the wait and never passes half of dropout_seconds."""
    polls = [
        estimate.poll_after(60, ahead + 1, estimate.wait_for(room(), ahead))
        for ahead in (0, 2, 10, 30, 1000)
    ]
    assert polls == sorted(polls)
    assert polls[0] == estimate.POLL_FLOOR
    assert polls[-1] == 30.0


def test_poll_without_an_estimate_stays_inside_dropout():
    """Unknown waits still poll within half of dropout_seconds."""
    assert estimate.poll_after(10, 500, None) == 5.0
    assert estimate.poll_after(10, 1, None) <= 5.0


def test_first_figure_shown_is_the_estimate():
    """With nothing shown before, the estimate is shown as it is."""
    assert estimate.smooth(None, Estimate(120, 400), now=5) == Shown(120, 400, 5)


def test_shown_figure_counts_down_when_the_estimate_agrees():
    """An estimate that fell by the time passed is shown unchanged."""
    shown = estimate.smooth(Shown(120, 400, 0), Estimate(90, 300), now=30)
    assert shown.wait == pytest.approx(90)


def test_shown_figure_rises_slowly():
    """A sudden rise of the estimate shows as a small step, not a jump."""
    shown = estimate.smooth(Shown(100, 0, 0), Estimate(200, 0), now=10)
    assert 90 < shown.wait < 100 + 100 * 10 / estimate.SMOOTH_UP


def test_shown_figure_falls_faster_than_it_rises():
    """Good news comes through sooner than bad news."""
    down = estimate.smooth(Shown(100, 0, 0), Estimate(50, 0), now=10)
    up = estimate.smooth(Shown(100, 0, 0), Estimate(150, 0), now=10)
    assert (90 - down.wait) > (up.wait - 90)


def test_shown_figure_round_trips_as_text():
    """The client carries the shown figure as short text; garbage reads as nothing."""
    for shown in (Shown(12.5, 3.0, 1_700_000_000.5), Shown(12.5, 3.0, 1_700_000_000.5, 0.125)):
        assert Shown.loads(shown.dumps()) == shown
    junk = (None, "", "1,2", "a,b,c", "nan,1,1", "-1,1,1", "1,1,1,-1", "1,1,1,1,1", "1," * 50)
    for text in junk:
        assert Shown.loads(text) is None


class Releasing:
    """A full room's statistics, recorded as room_lib.lua records them (every window),
    for seats released at exactly one per ``turn / capacity`` seconds: no noise, so the
    figures are closed-form."""

    def __init__(self, capacity: int = 20) -> None:
        self.capacity, self.now, self.stats = capacity, 0.0, {}

    def record(self, event: str, value: float) -> None:
        for suffix, tau in pace.WINDOWS.items():
            field, figures = event + suffix, self.stats
            last = figures.get(f"{field}:t")
            w = math.exp(-(self.now - last) / tau) if last is not None else 1.0
            for part, add in (("n", 1.0), ("s", value), ("q", value * value)):
                figures[f"{field}:{part}"] = figures.get(f"{field}:{part}", 0.0) * w + add
            figures[f"{field}:t"] = self.now

    def release(self, count: int, turn: float) -> Releasing:
        gap = turn / self.capacity
        for i in range(count):
            self.now += gap
            self.record("occupied", self.capacity * gap)
            self.record("hold", turn * (0.5 if i % 2 else 1.5))  # holds that vary: cs2 1/4
            self.record("busy", self.capacity * gap)
        return self

    def rates(self, capacity: int | None = None) -> Rates:
        found = pace.rates(self.stats, self.now, capacity or self.capacity)
        assert found is not None
        return found


def turn(rates: Rates) -> float:
    return rates.capacity / rates.service


def test_one_window_counts_its_releases_twice():
    """A mean under exponentially decaying weights is worth 2 n samples: share 1 / (2 n)."""
    room = Releasing().release(2400, turn=60.0)
    recent = pace.releases_seen(room.stats, room.now, 20)
    assert recent is not None
    assert recent.share == pytest.approx(1 / (2 * recent.seen))
    assert pace.apart(recent, recent, 20) == pytest.approx(0.0, abs=1e-12)


def test_a_steady_pace_keeps_todays_spread():
    """All windows agree: the hour's rate and error, no drift, and the short window adds
    nothing (the same rates as without it); the spread is the closed form of before."""
    room = Releasing().release(2400, turn=60.0)
    rates = room.rates()
    without = {k: v for k, v in room.stats.items() if pace.SHORT + ":" not in k}
    longer = pace.releases_seen(room.stats, room.now, 20, LONG)
    assert longer is not None
    assert turn(rates) == pytest.approx(60.0)
    assert (rates.drift, rates.moved) == (0.0, 0.0)
    assert rates.rate_error == pytest.approx(longer.error)
    assert pace.rates(without, room.now, 20) == pytest.approx(rates)
    guess = estimate.wait_for(rates, 100)
    c2 = estimate.departure_c2(rates.c2, rates.cs2, 20, 101)
    assert guess.wait == pytest.approx(101 * 3.0)
    assert guess.variance == pytest.approx(101 * c2 * 9.0 + guess.wait**2 * longer.error)


@pytest.mark.parametrize(
    ("new", "releases", "reached", "recent_alone"),
    [
        (240.0, 30, 0.8, 0.4),  # four times slower: within 20% of it after 30 releases
        (120.0, 40, 0.55, 0.3),  # twice as slow: over halfway (in log) after 40 releases
        (30.0, 60, 0.55, 0.25),  # twice as fast: over halfway after 60 releases (90 s)
    ],
)
def test_a_change_of_pace_moves_the_mean_and_widens_the_spread(
    new, releases, reached, recent_alone
):
    """A step from 60 to ``new`` seat-seconds per release: within the stated number of
    releases the mean has gone ``reached`` of the way (in log), where the ten-minute
    window alone would be under ``recent_alone`` of it; the range is far wider than
    while the pace held, and the drift says the pace moved."""
    room = Releasing().release(2400, turn=60.0)
    before = estimate.wait_for(room.rates(), 100)
    rates = room.release(releases, turn=new).rates()
    recent = pace.releases_seen(room.stats, room.now, 20)
    assert recent is not None
    way = math.log(new / 60.0)
    assert math.log(turn(rates) / 60.0) / way > reached
    assert math.log(recent.turn / 60.0) / way < recent_alone
    after = estimate.wait_for(rates, 100)
    assert rates.drift > 0 and rates.moved > 0
    assert after.spread / after.wait > 3 * before.spread / before.wait


def test_capacity_counts_at_once():
    """The pace is per seat: half the capacity, half the release rate, from the same
    statistics; seats held over the new capacity must free up first (one by one)."""
    room = Releasing().release(2400, turn=60.0)
    full, halved = room.rates(20), room.rates(10)
    assert halved.service == pytest.approx(full.service / 2)
    assert estimate.wait_for(halved, 50).wait == pytest.approx(2 * estimate.wait_for(full, 50).wait)
    drained = estimate.wait_for(halved, 50, seated=20)
    first = sum(60.0 / held for held in range(20, 10, -1))  # 10 releases of 20, 19, ... 11
    assert drained.wait == pytest.approx(estimate.wait_for(halved, 50).wait + first)
    assert estimate.wait_for(halved, 50, seated=10) == estimate.wait_for(halved, 50)


def test_drift_widens_longer_waits_more_up_to_a_bound():
    """A pace that moved lately may move within the wait: relative variance drift x wait,
    never more than ``moved``."""
    calm = room(service=1.0, capacity=10, rate_error=0.01)
    moving = calm._replace(drift=0.001, moved=0.2)
    for ahead, extra in ((9, 0.01), (99, 0.1), (999, 0.2)):
        still, moved = estimate.wait_for(calm, ahead), estimate.wait_for(moving, ahead)
        assert moved.wait == still.wait
        assert moved.variance == pytest.approx(still.variance + still.wait**2 * extra)


def test_trend_says_whether_the_line_slowed_down():
    """A release rate 10% under the one the figure shown before stands for: slower;
    10% over it: faster; nothing without a figure (or its rate) shown before."""
    before = Shown(300.0, 900.0, 0.0, pace=0.5)
    assert estimate.trend(before, 0.5 / 1.11) == "slower"
    assert estimate.trend(before, 0.5 / 1.09) is None
    assert estimate.trend(before, 0.5 * 1.11) == "faster"
    assert estimate.trend(None, 0.25) is None
    assert estimate.trend(before._replace(pace=0.0), 0.25) is None


def test_the_rate_shown_moves_with_the_figure():
    """The rate a figure stands for is smoothed by the same share as the figure, so the
    trend lasts while a figure rises toward a slower line's estimate."""
    before = Shown(100.0, 0.0, 0.0, pace=1.0)
    later = estimate.smooth(before, Estimate(200.0, 0.0), now=30, pace=0.5)
    keep = math.exp(-30 / estimate.SMOOTH_UP)
    assert later.wait == pytest.approx(200 + (70 - 200) * keep)
    assert later.pace == pytest.approx(0.5 * 2**keep)
    assert estimate.trend(later, 0.5) == "slower"
    settled = estimate.smooth(later, Estimate(170.0, 0.0), now=1200, pace=0.5)
    assert settled.pace == pytest.approx(0.5, rel=1e-3)
    assert estimate.trend(settled, 0.5) is None


def test_a_record_is_poor_when_few_waits_fell_inside_or_the_error_was_large():
    """Under 20 scored: not judged. Half inside and a 20% error: fine; 40% inside or a
    50% median error: poor."""
    assert not estimate.poor_record(19, 0.9, 0.1)
    assert not estimate.poor_record(20, 0.2, 0.6)
    assert estimate.poor_record(20, 0.2, 0.4)
    assert estimate.poor_record(50, 0.5, 0.7)
    assert not estimate.poor_record(50, None, None)
