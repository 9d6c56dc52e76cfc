"""The engine against a plain-Python model of the rules (hypothesis stateful testing).

Each step (join, check-in, leave, connection open/beat/close, open/pause/close, a larger
capacity, time passing, a new pace hint for the check-in windows, visitors who keep
checking in and visitors who stop) runs on both; after every step they must agree on
every ticket's state, the line's order, the check-in deadlines and the seats, and the
invariants must hold. Among them, those of the check-in windows (issue 26): no ghost
(nobody who last checked in more than dropout_seconds ago) is ever offered a seat, and
nobody who checks in within the window granted is ever dropped.
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

from webapp.domain import windows
from webapp.domain.join_limits import NO_LIMITS
from webapp.domain.refusals import PlaceMoved
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
    w: int = 0  # the check-in window last granted (0: none yet)
    last: float = 0.0  # when the visitor last joined or checked in
    kept: bool = True  # every deadline so far was met (checked in or claimed in time)


@dataclass
class Model:
    """The rules of issue 2, written as plainly as possible."""

    capacity: int
    dropout: float
    grace: float
    session: float
    max_checkin: int = 300
    status: str = "open"
    line: list[str] = field(default_factory=list)  # in order
    checkin: dict[str, float] = field(default_factory=dict)  # waiting -> deadline
    seats: dict[str, float] = field(default_factory=dict)  # seated -> deadline
    tickets: dict[str, ModelTicket] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    moved_to: dict[str, str] = field(default_factory=dict)  # a moved place -> its browser
    hint: windows.Hint | None = None  # the pace hint the windows are granted from
    hint_until: float = 0.0

    def end(self, token: str, why: str, now: float) -> None:
        t = self.tickets[token]
        if token in self.line:
            self.line.remove(token)
        self.checkin.pop(token, None)
        self.seats.pop(token, None)
        if t.identity and self.identities.get(t.identity) == token:
            del self.identities[t.identity]
        if why in ("dropped", "unclaimed"):
            # nobody who checks in (or claims the seat offered) in time is dropped
            assert not t.kept, (token, why, t)
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
            while len(self.seats) < self.capacity:
                head = self.offerable()
                if head is None:
                    break
                t = self.tickets[head]
                # no ghost is ever offered a seat
                assert now - t.last <= self.dropout, (head, t, now)
                self.line.remove(head)
                self.checkin.pop(head)
                self.seats[head] = now + self.dropout
                t.st = "offered"
        for token in [t for t, x in self.tickets.items() if x.st == "ended"]:
            if self.tickets[token].ended_at < now - RETAIN:
                del self.tickets[token]

    def offerable(self) -> str | None:
        """The first in line whose last window was the head's, of the first PASS_MAX +
        1 (the others are passed over: still on a long window, not overdue)."""
        for token in self.line[: windows.PASS_MAX + 1]:
            if self.tickets[token].w <= self.dropout:
                return token
        return None

    def window(self, ahead: int, now: float) -> int:
        hint = self.hint if now <= self.hint_until else None
        return windows.window(hint, ahead, int(self.dropout), self.max_checkin)

    def grant(self, token: str, ahead: int, now: float) -> None:
        t = self.tickets[token]
        t.w = self.window(ahead, now)
        t.last = now
        self.checkin[token] = now + t.w

    def renew(self, token: str, now: float) -> None:
        t = self.tickets[token]
        if t.st == "waiting":
            self.grant(token, self.line.index(token), now)
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
            self.grant(token, len(self.line) - 1, now)
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

    def look(self, token: str, holder: str, now: float) -> str:
        """A waiting page's look (room_look.lua): a place moved to another browser is
        not touched; a waiting ticket checks in; a seat is only looked at."""
        self.settle(now)  # the script's upkeep runs first, whatever the tickets
        if token in self.moved_to and self.moved_to[token] != holder:
            return "moved"
        if token not in self.tickets:
            return "unknown"
        if self.tickets[token].st == "ended":
            return "gone"
        if self.tickets[token].st == "waiting":
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

    def passes(self, now: float) -> None:
        """Time passes to ``now``: a ticket whose deadline went by unmet broke its
        promise (only such a one may be dropped)."""
        for token, due in [*self.checkin.items(), *self.seats.items()]:
            t = self.tickets[token]
            if due < now and t.st in ("waiting", "offered"):
                t.kept = False


REFUSALS = {TicketGone: "gone", TicketNotFound: "unknown", NotSeated: "not_seated",
            PlaceMoved: "moved"}  # fmt: skip


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
    max_examples=150,
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
        max_checkin=st.sampled_from([5, 60, 300]),
    )
    def setup(self, capacity, dropout, grace, session, max_checkin):
        self.client = redis.Redis.from_url(self.redis_url, decode_responses=True)
        self.client.flushall()
        self.now = 1_700_000_000.0
        self.keys = Keys("model")
        self.engine = engine(self.client, self.keys, lambda: self.now)
        self.engine.configure(
            ROOM,
            {"capacity": capacity, "dropout_seconds": dropout, "grace_seconds": grace,
             "session_seconds": session, "max_checkin_seconds": max_checkin},
        )  # fmt: skip
        self.model = Model(capacity, dropout, grace, session, max_checkin)
        self.ghosts: set[str] = set()

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

    @precondition(lambda self: hasattr(self, "model"))
    @rule(
        a=st.sampled_from([0.0, 2.5, 20.0, 75.0]),
        b=st.sampled_from([0.0, 9.0]),
        c=st.sampled_from([-12.0, 0.0, 40.0]),
        lasts=st.sampled_from([0.0, 30.0, 600.0]),
    )
    def pace(self, a, b, c, lasts):
        """The sweep's hint of the room's pace: windows grow from the head (up to
        max_checkin_seconds) while it holds."""
        hint = windows.Hint(a, b, c)
        if self.engine.set_pace(ROOM, hint.text(self.now + lasts)):
            self.model.hint, self.model.hint_until = hint, self.now + lasts

    @rule(token=tokens)
    def stops(self, token):
        """The visitor stops checking in (a closed tab): a ghost from now on."""
        self.ghosts.add(token)

    @rule()
    def everyone_checks_in(self):
        """Every waiting or offered visitor who has not stopped checks in, at once."""
        batch = [
            token
            for token, t in self.model.tickets.items()
            if t.st in ("waiting", "offered") and token not in self.ghosts
        ]
        if batch:
            self.check_in_together(batch)

    @rule(
        target=tokens,
        identities=st.lists(st.sampled_from(["", "", "v1", "v2", "v3"]), min_size=1, max_size=5),
    )
    def join_together(self, identities):
        """Joins coalesced into one script call: the same as one after another at the
        same moment (an identity may come twice: the second gets the first's ticket)."""
        self.made = getattr(self, "made", 0) + len(identities)
        joiners = [
            (f"batch-{self.made}-{n}", identity, "", "", "", "", "", "", "", NO_LIMITS)
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
        answers = self.engine.check_in_many(ROOM, batch)
        for token, answer in zip(batch, answers, strict=True):
            assert REFUSALS.get(type(answer), "ok") == self.model.check_in(token, self.now)
            if isinstance(answer, Ticket):  # as the model stands right after this one
                assert answer.token == token
                assert answer.state == self.model.tickets[token].st
                assert answer.position == self.model.position(token)
                if answer.state == "waiting":  # the window granted, as the model grants it
                    assert answer.window == self.model.tickets[token].w

    @rule(token=tokens, holder=st.sampled_from(["b1", "b2"]))
    def moves_to_another_browser(self, token, holder):
        """A "continue on another device" link taken (place_move.lua writes the key)."""
        self.client.set(self.keys.move_holder(ROOM, token), holder)
        self.model.moved_to[token] = holder

    @rule(batch=st.lists(st.tuples(tokens, st.sampled_from(["", "b1", "b2"])), min_size=1,
                         max_size=5))  # fmt: skip
    def pages_look_together(self, batch):
        """Waiting pages' looks in one script call (room_look.lua): a moved place is not
        touched, a waiting ticket checks in (its window granted as the model grants it),
        an offered seat is not claimed and a held one not held longer."""
        answers = self.engine.look_many(ROOM, batch)
        for (token, holder), answer in zip(batch, answers, strict=True):
            assert REFUSALS.get(type(answer), "ok") == self.model.look(token, holder, self.now)
            if isinstance(answer, Ticket):
                assert answer.state == self.model.tickets[token].st
                assert answer.position == self.model.position(token)
                if answer.state == "waiting":
                    assert answer.window == self.model.tickets[token].w

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

    @rule(seconds=st.sampled_from([0.5, 1, 2, 4, 6, 11, 16, 31, 61, 151, 301, 3601]))
    def time_passes(self, seconds):
        self.now += seconds
        self.model.passes(self.now)

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
        assert dict(self.client.zrange(keys.checkin, 0, -1, withscores=True)) == self.model.checkin
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
