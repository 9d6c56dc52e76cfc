"""The engine against a plain-Python model of the rules (hypothesis stateful testing).

Each step (join, check-in, leave, connection open/beat/close, open/pause/close, a larger
capacity, time passing)
runs on both; after every step they must agree on every ticket's state, the line's
order and the seats, and the invariants must hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
import redis
from building import engine
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from webapp.domain.rooms import (
    NotSeated,
    RoomClosed,
    Ticket,
    TicketGone,
    TicketNotFound,
)
from webapp.redis.keys import Keys

ROOM = "model"
RETAIN = 3600  # room_lib.lua


@dataclass
class ModelTicket:
    st: str
    identity: str = ""
    why: str = ""
    sock: bool = False
    ended_at: float = 0.0


@dataclass
class Model:
    """The rules of issue 2, written as plainly as possible."""

    capacity: int
    dropout: float
    grace: float
    session: float
    status: str = "open"
    line: list[str] = field(default_factory=list)  # in order
    checkin: dict[str, float] = field(default_factory=dict)  # waiting -> deadline
    seats: dict[str, float] = field(default_factory=dict)  # seated -> deadline
    tickets: dict[str, ModelTicket] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)

    def end(self, token: str, why: str, now: float) -> None:
        t = self.tickets[token]
        if token in self.line:
            self.line.remove(token)
        self.checkin.pop(token, None)
        self.seats.pop(token, None)
        if t.identity and self.identities.get(t.identity) == token:
            del self.identities[t.identity]
        t.st, t.why, t.ended_at = "ended", why, now

    def lapse_reason(self, t: ModelTicket) -> str:
        if t.st == "offered":
            return "unclaimed"
        return "grace" if t.sock else "session"

    def settle(self, now: float) -> None:
        for token in [t for t, due in self.checkin.items() if due < now]:
            self.end(token, "dropped", now)
        for token in [t for t, due in self.seats.items() if due < now]:
            self.end(token, self.lapse_reason(self.tickets[token]), now)
        if self.status != "paused":
            while self.line and len(self.seats) < self.capacity:
                head = self.line.pop(0)
                self.checkin.pop(head)
                self.seats[head] = now + self.dropout
                self.tickets[head].st = "offered"
        for token in [t for t, x in self.tickets.items() if x.st == "ended"]:
            if self.tickets[token].ended_at < now - RETAIN:
                del self.tickets[token]

    def renew(self, token: str, now: float) -> None:
        t = self.tickets[token]
        if t.st == "waiting":
            self.checkin[token] = now + self.dropout
        else:
            self.seats[token] = max(self.seats[token], now + self.session)
            t.st = "admitted"

    def join(self, token: str, identity: str, now: float) -> str | None:
        """Returns the token the visitor holds afterwards; None if the room is closed."""
        self.settle(now)
        existing = self.identities.get(identity) if identity else None
        if existing is not None:
            self.renew(existing, now)
            return existing
        if self.status == "closed":
            return None
        self.tickets[token] = ModelTicket("waiting", identity)
        if self.status == "open" and not self.line and len(self.seats) < self.capacity:
            self.tickets[token].st = "admitted"
            self.seats[token] = now + self.session
        else:
            self.line.append(token)
            self.checkin[token] = now + self.dropout
        if identity:
            self.identities[identity] = token
        return token

    def check_in(self, token: str, now: float) -> str:
        self.settle(now)
        if token not in self.tickets:
            return "unknown"
        if self.tickets[token].st == "ended":
            return "gone"
        self.renew(token, now)
        return "ok"

    def leave(self, token: str, now: float) -> str:
        if token not in self.tickets:
            self.settle(now)
            return "unknown"
        if self.tickets[token].st != "ended":
            self.end(token, "left", now)
        self.settle(now)
        return "ok"

    def presence(self, token: str, op: str, hold: float, now: float) -> str:
        self.settle(now)
        t = self.tickets.get(token)
        if t is None:
            return "unknown"
        if t.st == "ended":
            return "gone"
        if t.st == "waiting":
            return "not_seated"
        if op == "close":  # never later than the seat's hold (room_presence.lua)
            self.seats[token] = min(self.seats[token], now + self.grace)
        else:
            self.seats[token] = now + hold
            t.st = "admitted"
        t.sock = True
        return "ok"

    def position(self, token: str) -> int:
        return self.line.index(token) + 1 if token in self.line else 0


REFUSALS = {TicketGone: "gone", TicketNotFound: "unknown", NotSeated: "not_seated"}


def outcome(call) -> str:
    try:
        call()
    except TicketGone:
        return "gone"
    except TicketNotFound:
        return "unknown"
    except NotSeated:
        return "not_seated"
    return "ok"


@pytest.mark.slow
@settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
class RoomMachine(RuleBasedStateMachine):
    tokens = Bundle("tokens")
    redis_url = ""

    @initialize(
        capacity=st.integers(1, 4),
        dropout=st.sampled_from([5, 10, 30]),
        grace=st.sampled_from([1, 5, 15]),
        session=st.sampled_from([10, 60]),
    )
    def setup(self, capacity, dropout, grace, session):
        self.client = redis.Redis.from_url(self.redis_url, decode_responses=True)
        self.client.flushall()
        self.now = 1_700_000_000.0
        self.engine = engine(self.client, Keys("model"), lambda: self.now)
        self.engine.configure(
            ROOM,
            {"capacity": capacity, "dropout_seconds": dropout, "grace_seconds": grace,
             "session_seconds": session},
        )  # fmt: skip
        self.model = Model(capacity, dropout, grace, session)

    def teardown(self):
        self.client.close()

    @rule(target=tokens, identity=st.sampled_from(["", "", "v1", "v2", "v3"]))
    def join(self, identity):
        try:
            ticket = self.engine.join(ROOM, identity=identity)
        except RoomClosed:
            assert self.model.join("refused", identity, self.now) is None
            return multiple()
        held = self.model.join(ticket.token, identity, self.now)
        assert ticket.token == held
        assert ticket.state == self.model.tickets[held].st
        assert ticket.position == self.model.position(held)
        return ticket.token

    @rule(token=tokens)
    def check_in(self, token):
        expected = self.model.check_in(token, self.now)
        assert outcome(lambda: self.engine.check_in(ROOM, token)) == expected

    @rule(
        target=tokens,
        identities=st.lists(st.sampled_from(["", "", "v1", "v2", "v3"]), min_size=1, max_size=5),
    )
    def join_together(self, identities):
        """Joins coalesced into one script call: the same as one after another at the
        same moment (an identity may come twice: the second gets the first's ticket)."""
        self.made = getattr(self, "made", 0) + len(identities)
        joiners = [
            (f"batch-{self.made}-{n}", identity, "", "", "", "", "", "")
            for n, identity in enumerate(identities)
        ]
        answers = self.engine.join_many(ROOM, joiners)
        held = []
        for (token, identity, *_), answer in zip(joiners, answers, strict=True):
            expected = self.model.join(token, identity, self.now)
            if expected is None:
                assert isinstance(answer, RoomClosed)
                continue
            assert isinstance(answer, Ticket) and answer.token == expected
            assert answer.state == self.model.tickets[expected].st
            assert answer.position == self.model.position(expected)
            held.append(expected)
        return multiple(*held)

    @rule(batch=st.lists(tokens, min_size=1, max_size=5))
    def check_in_together(self, batch):
        """Check-ins coalesced into one script call: the same as one after another at
        the same moment, each with its own answer (a token may come twice)."""
        expected = [self.model.check_in(token, self.now) for token in batch]
        answers = self.engine.check_in_many(ROOM, batch)
        assert [REFUSALS.get(type(a), "ok") for a in answers] == expected
        for token, answer in zip(batch, answers, strict=True):
            if isinstance(answer, Ticket):
                assert answer.token == token
                assert answer.state == self.model.tickets[token].st
                assert answer.position == self.model.position(token)

    @rule(token=tokens)
    def leave(self, token):
        expected = self.model.leave(token, self.now)
        assert outcome(lambda: self.engine.leave(ROOM, token)) == expected

    @rule(
        token=tokens, op=st.sampled_from(["open", "beat", "close"]), hold=st.sampled_from([3, 20])
    )
    def presence(self, token, op, hold):
        expected = self.model.presence(token, op, hold, self.now)
        assert outcome(lambda: self.engine.presence(ROOM, token, op, hold)) == expected

    @rule(seconds=st.sampled_from([0.5, 1, 2, 4, 6, 11, 16, 31, 61, 3601]))
    def time_passes(self, seconds):
        self.now += seconds

    @rule()
    def sweep(self):
        self.engine.sweep(ROOM)
        self.model.settle(self.now)

    @precondition(lambda self: hasattr(self, "model"))
    @rule(more=st.integers(1, 3))
    def raise_capacity(self, more):
        self.model.capacity += more
        self.engine.configure(ROOM, {"capacity": self.model.capacity})
        self.model.settle(self.now)

    @precondition(lambda self: hasattr(self, "model"))
    @rule(status=st.sampled_from(["open", "paused", "closed"]))
    def set_status(self, status):
        self.engine.configure(ROOM, {"status": status})
        self.model.status = status
        self.model.settle(self.now)

    @rule(target=tokens)
    def stranger(self):
        return multiple("not-a-ticket")

    @invariant()
    def engine_agrees_with_model(self):
        if not hasattr(self, "model"):
            return
        keys = self.engine.keys.room(ROOM)
        assert self.client.zrange(keys.line, 0, -1) == self.model.line
        assert set(self.client.zrange(keys.seats, 0, -1)) == set(self.model.seats)
        assert len(self.model.seats) <= self.model.capacity
        states = {t: s for t, s in self.client.hgetall(keys.tickets).items()}
        assert set(states) == set(self.model.tickets)
        for token, t in self.model.tickets.items():
            assert f'"st":"{t.st}"' in states[token], (token, t, states[token])
        assert self.client.hgetall(keys.identities) == self.model.identities


@pytest.fixture
def machine_url(redis_url):
    RoomMachine.redis_url = redis_url
    return redis_url


def test_engine_matches_model(machine_url):
    """Engine and model agree after every step; seats never exceed capacity."""
    RoomMachine.TestCase().runTest()
