"""The engine under every queueing_method (issue 30) against a plain-Python model
(hypothesis stateful testing): visitors join, keep checking in or stop, leave their
seats, time passes, the sweep runs, and the operator switches the method at any step.

After every step: nobody is admitted twice, no seat is given beyond the capacity but
under passthrough (whose extra seats are only given back, never added to), nobody who
keeps checking in loses a place, the line keeps join order, a passthrough room has
nobody present left waiting, and a reject room took nobody new.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
import redis
from building import engine
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from webapp.domain.draw import SeatDraw
from webapp.domain.reports import Reports
from webapp.domain.rooms import QueueRejecting, TicketGone
from webapp.redis.keys import Keys

ROOM = "methods"
METHODS = ("fifo", "random", "passthrough", "reject")
DROPOUT = 10


@dataclass
class Model:
    """What the rules promise, written plainly: who joined in which order, who keeps
    checking in, who left; the method and the seats it may give."""

    capacity: int
    method: str = "fifo"
    joined: list[str] = field(default_factory=list)  # join order
    present: set[str] = field(default_factory=set)  # check in at every step
    left: set[str] = field(default_factory=set)
    ceiling: float = 0.0  # seats allowed now: capacity, or more while passthrough's stay

    def switch(self, method: str, seated: int) -> None:
        self.method = method
        self.ceiling = math.inf if method == "passthrough" else max(self.capacity, seated)


@settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
class MethodsMachine(RuleBasedStateMachine):
    redis_url = ""

    @initialize(capacity=st.integers(1, 3), method=st.sampled_from(METHODS))
    def setup(self, capacity: int, method: str) -> None:
        self.client = redis.Redis.from_url(self.redis_url, decode_responses=True)
        self.client.flushall()
        self.now = 1_700_000_000.0
        self.engine = engine(self.client, Keys("qm"), lambda: self.now)
        self.reports = Reports(self.engine)
        self.engine.configure(
            ROOM,
            {"capacity": capacity, "dropout_seconds": DROPOUT, "queueing_method": method},
        )
        self.model = Model(capacity)
        self.model.switch(method, 0)
        self.count = 0

    def teardown(self) -> None:
        self.client.close()

    def keys(self) -> Keys:
        return self.engine.keys.room(ROOM)

    def seats(self) -> list[str]:
        return list(self.client.zrange(self.keys().seats, 0, -1))

    def line(self) -> list[str]:
        return list(self.client.zrange(self.keys().line, 0, -1))

    def everyone_present_checks_in(self) -> None:
        for token in sorted(self.model.present, key=self.model.joined.index):
            try:
                self.engine.check_in(ROOM, token)
            except TicketGone as gone:
                raise AssertionError(
                    f"{token} checked in on time and lost it: {gone.why}"
                ) from None

    @rule(n=st.integers(1, 4), present=st.booleans())
    def join(self, n: int, present: bool) -> None:
        for _ in range(n):
            self.count += 1
            seated = len(self.seats())
            try:
                ticket = self.engine.join(ROOM, identity=f"v{self.count}")
            except QueueRejecting:
                assert self.model.method == "reject"
                continue
            assert self.model.method != "reject", "a reject room took a new join"
            self.model.joined.append(ticket.token)
            if present:
                self.model.present.add(ticket.token)
            if self.model.method == "passthrough":
                assert ticket.state == "admitted"
            elif ticket.state == "admitted":  # straight in: only to a free seat
                assert seated < self.model.capacity

    @rule(seconds=st.sampled_from([1, 3, DROPOUT // 2 - 1]))
    def time_passes(self, seconds: int) -> None:
        self.now += seconds
        self.everyone_present_checks_in()

    def pick(self, data: st.DataObject, tokens: set[str] | list[str]) -> str | None:
        """One of ``tokens`` in join order (None if there are none). Always one number
        of a fixed range drawn, never a list the engine's state sizes: a random draw of
        a seat (random order) makes that state differ from one run of the same steps to
        the next, and hypothesis refuses data drawn differently for the same steps."""
        index = data.draw(st.integers(0, 999))
        ordered = sorted(tokens, key=self.model.joined.index)
        return ordered[index % len(ordered)] if ordered else None

    @rule(data=st.data())
    def stops_checking_in(self, data: st.DataObject) -> None:
        token = self.pick(data, self.model.present)
        if token is not None:
            self.model.present.discard(token)

    @rule(data=st.data())
    def someone_leaves_a_seat(self, data: st.DataObject) -> None:
        token = self.pick(data, self.seats())
        if token is not None:
            self.engine.leave(ROOM, token)
            self.model.present.discard(token)
            self.model.left.add(token)

    @rule(method=st.sampled_from(METHODS))
    def operator_switches(self, method: str) -> None:
        self.engine.configure(ROOM, {"queueing_method": method})
        self.model.switch(method, len(self.seats()))

    @rule()
    def sweep(self) -> None:
        self.engine.sweep(ROOM)

    @invariant()
    def rules_hold(self) -> None:
        if not hasattr(self, "model"):
            return
        model, seats, line = self.model, self.seats(), self.line()
        # no double admission: one audited admission per ticket, never seated and waiting
        admits = Counter(a.code for a in self.reports.audit(ROOM, count=1000, kinds=("admit",)))
        assert all(n == 1 for n in admits.values()), admits
        assert set(seats).isdisjoint(line)
        for entry in self.reports.audit(ROOM, count=1000, kinds=("admit",)):
            draw = SeatDraw.parse(entry.detail)
            assert draw is None or draw.verify()
        # capacity: beyond it only under passthrough, and passthrough's extra never grows
        assert len(seats) <= model.ceiling
        if model.method != "passthrough":
            model.ceiling = max(model.capacity, len(seats))
        # nobody who keeps checking in is lost; the line keeps join order
        states = self.client.hgetall(self.keys().tickets)
        for token in model.present:
            assert '"st":"ended"' not in states.get(token, ""), (token, states.get(token))
        assert line == [t for t in model.joined if t in set(line)]
        if model.method == "passthrough" and self.engine.find_settings(ROOM).status == "open":
            assert model.present.isdisjoint(line)


@pytest.fixture
def machine_url(redis_url: str) -> str:
    MethodsMachine.redis_url = redis_url
    return redis_url


def test_engine_keeps_the_rules_under_every_method(machine_url: str) -> None:
    """No double admission, capacity kept, nobody present lost, join order kept,
    whatever the method and however often it changes."""
    MethodsMachine.TestCase().runTest()
