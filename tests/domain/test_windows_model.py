"""The check-in windows (issue 26) on the engine, as visitors meet them: a line of
honest visitors (each checks in within the window the last check-in granted, at a share
of it) and ghosts (who stop), seats freeing as holders leave, the sweep every second.
Hypothesis draws the room, the pace hint, and every visitor's habits; the properties
are checked on the engine after every step:

- no ghost is ever offered a seat: whoever is offered one checked in within the last
  ``dropout_seconds``;
- nobody who checks in within the window granted is ever dropped (nor loses an offer),
  nor who checks in at ``poll_after`` as told, even when that poll is lost and tried
  again a second later (the margin ``poll_after`` keeps before the window's end).

``test_rooms_model.py`` holds the engine to the plain-Python model step by step
(windows, deadlines, who is passed over); this holds the rules to their promise.
"""

from __future__ import annotations

import json
import math

import hypothesis.strategies as st
import pytest
from building import engine
from hypothesis import HealthCheck, given, settings

from webapp.domain import estimate, windows
from webapp.domain.rooms import Ticket, TicketGone
from webapp.redis.keys import Keys

ROOM = "windows"
START = 1_700_000_000.0

visitor = st.fixed_dictionaries(
    {
        # of the window, between check-ins; "told": at poll_after, as the page does;
        # "lost": that poll lost on the way and tried again a second later (issue 32)
        "share": st.sampled_from([0.25, 0.5, 0.9, 1.0, "told", "lost"]),
        "stops": st.one_of(st.none(), st.integers(0, 240)),  # a ghost from then on
        "hold": st.integers(1, 90),  # seconds in the seat, once in
        "joins": st.integers(0, 60),
    }
)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    capacity=st.integers(1, 3),
    dropout=st.sampled_from([5, 10]),
    max_checkin=st.sampled_from([30, 300]),
    hint=st.tuples(
        st.sampled_from([2.0, 10.0, 40.0]),
        st.sampled_from([0.0, 5.0]),
        st.sampled_from([-5.0, 20.0]),
    ),
    people=st.lists(visitor, min_size=3, max_size=12),
)
def test_ghosts_are_never_offered_and_the_punctual_never_dropped(
    r, capacity, dropout, max_checkin, hint, people
):
    """No ghost is ever offered a seat; nobody who checks in within the window granted
    is ever dropped."""
    r.flushall()
    now = START
    rooms = engine(r, Keys("win"), lambda: now)
    rooms.configure(
        ROOM,
        {"capacity": capacity, "dropout_seconds": dropout, "max_checkin_seconds": max_checkin},
    )
    assert rooms.set_pace(ROOM, windows.Hint(*hint).text(START + 100_000))
    tickets = rooms.keys.room(ROOM).tickets
    token_of: dict[int, str] = {}
    last: dict[str, float] = {}  # token -> when its holder last joined or checked in
    due: dict[str, float] = {}  # token -> when its holder checks in next
    honest: dict[str, bool] = {}
    seated_at: dict[str, float] = {}
    seen: dict[str, str] = {}

    def record(ticket: Ticket) -> None:
        last[ticket.token] = now
        if ticket.state == "waiting":
            assert ticket.window >= dropout
            share = people[index[ticket.token]]["share"]
            if isinstance(share, str):
                told = estimate.poll_after(dropout, ticket.position, None, ticket.window)
                due[ticket.token] = now + math.floor(told) + (1 if share == "lost" else 0)
            else:
                due[ticket.token] = now + share * ticket.window
        elif ticket.state in ("offered", "admitted"):
            seated_at.setdefault(ticket.token, now)
            due[ticket.token] = now + 1  # claims it / keeps it (an API client's poll)

    def look() -> None:
        for token, raw in r.hgetall(tickets).items():
            t = json.loads(raw)
            before, seen[token] = seen.get(token), t["st"]
            if t["st"] == "offered" and before != "offered":
                assert now - last[token] <= dropout, ("a ghost was offered a seat", token, t)
            if t["st"] == "ended" and t.get("why") in ("dropped", "unclaimed"):
                assert not honest[token], ("dropped although on time", token, t, now)

    index: dict[str, int] = {}
    order = sorted(range(len(people)), key=lambda i: people[i]["joins"])
    for tick in range(400):
        now = START + tick
        for i in order:
            if people[i]["joins"] == tick:
                ticket = rooms.join(ROOM)
                token_of[i], index[ticket.token] = ticket.token, i
                honest[ticket.token] = people[i]["stops"] is None
                record(ticket)
        for token, when in sorted(due.items(), key=lambda kv: kv[1]):
            if when > now or seen.get(token) == "ended":
                continue
            person = people[index[token]]
            if token in seated_at and now - seated_at[token] >= person["hold"]:
                rooms.leave(ROOM, token)
                due.pop(token)
                continue
            stops = person["stops"]
            if stops is not None and now - START - person["joins"] >= stops:
                due.pop(token)  # a ghost from now on
                continue
            try:
                record(rooms.check_in(ROOM, token))
            except TicketGone:
                due.pop(token)
        rooms.sweep(ROOM)
        look()
