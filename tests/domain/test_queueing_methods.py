"""The operator's choice of order (issue 30): queueing_method fifo, random, passthrough,
reject, on the engine's scripts, and switching between them."""

from __future__ import annotations

from itertools import permutations
from typing import Any

import pytest

from webapp.domain.draw import SeatDraw, seat_draw_index
from webapp.domain.reports import Reports
from webapp.domain.rooms import QueueRejecting, WaitingRooms

METHODS = ("fifo", "random", "passthrough", "reject")


def line_tokens(rooms: WaitingRooms, room: str) -> list[str]:
    return list(rooms.client.zrange(rooms.keys.room(room).line, 0, -1))


def seat_tokens(rooms: WaitingRooms, room: str) -> set[str]:
    return set(rooms.client.zrange(rooms.keys.room(room).seats, 0, -1))


def full_room(rooms: WaitingRooms, room: str, waiting: int, capacity: int = 2) -> list[str]:
    """A room whose ``capacity`` seats are held, with ``waiting`` in line behind them;
    the tokens in line, in join order."""
    rooms.configure(room, {"capacity": capacity})
    for i in range(capacity):
        rooms.check_in(room, rooms.join(room, identity=f"in-{i}").token)
    return [rooms.join(room, identity=f"w-{i}").token for i in range(waiting)]


def check_in_all(rooms: WaitingRooms, room: str, tokens: list[str]) -> dict[str, str]:
    """Everyone checks in (present); each token's state after."""
    return {token: rooms.check_in(room, token).state for token in tokens}


@pytest.mark.parametrize(("first", "then"), list(permutations(METHODS, 2)))
def test_switching_between_methods_loses_no_place(
    rooms: WaitingRooms, clock: Any, first: str, then: str
) -> None:
    """Every ordered pair of methods with 50 waiting: nobody loses a place, and those
    still in line keep their join order."""
    room = f"switch-{first}-{then}"
    joined = full_room(rooms, room, 50)
    for method in (first, then):
        rooms.configure(room, {"queueing_method": method})
        rooms.sweep(room)
        clock.advance(5)
        states = check_in_all(rooms, room, joined)
        assert "ended" not in states.values(), method
        still = [t for t in joined if states[t] == "waiting"]
        assert line_tokens(rooms, room) == still  # join order kept
        if method == "passthrough":
            assert still == []
            assert all(states[t] == "admitted" for t in joined)
    seated = seat_tokens(rooms, room)
    assert seated.isdisjoint(line_tokens(rooms, room))
    assert len(seated) + len(line_tokens(rooms, room)) == 52


def test_random_draws_among_present_and_each_draw_checks_out(
    rooms: WaitingRooms, reports: Reports, clock: Any
) -> None:
    """Under random order each freed seat goes to the ticket at the index its audited
    seed gives in the line as it stood; the picks are not the line's head."""
    room = "random"
    rooms.configure(room, {"capacity": 1, "queueing_method": "random"})
    holders = [rooms.join(room, identity="in").token]
    joined = [rooms.join(room, identity=f"w-{i}").token for i in range(30)]
    picked: list[str] = []
    for _ in range(12):
        before = line_tokens(rooms, room)
        for token in holders:
            rooms.leave(room, token)
        admit = reports.audit(room, count=1, kinds=("admit",))[0]
        draw = SeatDraw.parse(admit.detail)
        assert draw is not None and draw.verify()
        assert draw.size == len(before)
        assert draw.pick == seat_draw_index(draw.seed, len(before))
        winner = before[draw.pick]
        assert reports.find(room, admit.code) is not None
        assert rooms.check_in(room, winner).state == "admitted"
        assert rooms.client.hget(rooms.keys.room(room).tickets, winner) is not None
        picked.append(winner)
        holders = [winner]
        clock.advance(1)
        check_in_all(rooms, room, [t for t in joined if t not in picked])
    assert picked != joined[: len(picked)]  # 1 chance in 30!/18! of a false alarm
    assert len(set(picked)) == len(picked)


def test_random_passes_over_the_absent(rooms: WaitingRooms, clock: Any) -> None:
    """A ticket that stopped checking in is never drawn for a seat: it is dropped once
    its check-in is overdue, and the seat goes to someone present."""
    room = "absent"
    rooms.configure(room, {"capacity": 1, "queueing_method": "random", "dropout_seconds": 10})
    holder = rooms.join(room, identity="in").token
    gone = [rooms.join(room, identity=f"gone-{i}").token for i in range(10)]
    here = rooms.join(room, identity="here").token
    for _ in range(2):
        clock.advance(6)
        rooms.check_in(room, here)
    rooms.leave(room, holder)
    assert rooms.check_in(room, here).state == "admitted"
    assert all(rooms.client.zscore(rooms.keys.room(room).line, t) is None for t in gone)


def test_passthrough_admits_everyone_beyond_capacity(
    rooms: WaitingRooms, reports: Reports, clock: Any
) -> None:
    """Switching to passthrough lets everyone waiting in, counted as admissions, and a
    new joiner enters at once whatever the seats."""
    room = "through"
    joined = full_room(rooms, room, 30)
    rooms.configure(room, {"queueing_method": "passthrough"})
    assert line_tokens(rooms, room) == []
    assert all(state == "admitted" for state in check_in_all(rooms, room, joined).values())
    late = rooms.join(room, identity="late")
    assert late.state == "admitted" and late.active == 33
    admits = reports.audit(room, count=100, kinds=("admit",))
    assert len(admits) == 33
    assert sum(1 for a in admits if a.detail == "line") == 30


def test_reject_turns_new_joins_away_and_keeps_everyone(rooms: WaitingRooms) -> None:
    """Under reject a new join is refused with a retry hint; those waiting keep their
    places (and join again as a check-in), seats are kept, and the line still moves."""
    room = "reject"
    joined = full_room(rooms, room, 5)
    rooms.configure(room, {"queueing_method": "reject"})
    with pytest.raises(QueueRejecting) as refused:
        rooms.join(room, identity="new")
    assert refused.value.retry_after > 0
    again = rooms.join(room, identity="w-0")  # already holds a place: a check-in
    assert again.token == joined[0] and again.state == "waiting"
    assert line_tokens(rooms, room) == joined
    assert len(seat_tokens(rooms, room)) == 2
    rooms.leave(room, rooms.join(room, identity="in-0").token)
    assert rooms.check_in(room, joined[0]).state == "admitted"  # first come, as before
    assert line_tokens(rooms, room) == joined[1:]
