"""The waiting-room engine's rules, one test each, with time under the test's control.

Every test runs against a single Redis and against a Redis Cluster (the `db` fixture)."""

from __future__ import annotations

import pytest
from building import engine

from webapp.domain.reports import Reports
from webapp.domain.rooms import (
    InvalidInput,
    JoinRefused,
    NotSeated,
    RoomClosed,
    RoomNotFound,
    TicketGone,
    TicketNotFound,
)

ROOM = "lobby"


@pytest.fixture
def client(db):
    return db


@pytest.fixture
def rooms(rooms):
    """The engine with the room these tests use."""
    rooms.configure(
        ROOM,
        {"capacity": 2, "dropout_seconds": 30, "grace_seconds": 10, "session_seconds": 300},
    )
    return rooms


def fill(rooms, n, room=ROOM):
    return [rooms.join(room, name=f"p{i}") for i in range(n)]


def test_first_come_first_served(rooms):
    """While seats are free and nobody waits, a joiner is admitted at once."""
    a, b = fill(rooms, 2)
    assert (a.state, a.position, a.active) == ("admitted", 0, 1)
    assert (b.state, b.position, b.active) == ("admitted", 0, 2)


def test_later_arrivals_wait_in_order(rooms):
    """Past capacity, joiners go to the back of the line with positions 1, 2, 3."""
    tickets = fill(rooms, 5)
    assert [t.position for t in tickets[2:]] == [1, 2, 3]
    assert [t.ahead for t in tickets[2:]] == [0, 1, 2]
    assert tickets[-1].waiting == 3


def test_freed_seat_goes_to_head_of_line(rooms):
    """When a seated visitor leaves, the head of the line is let in, not anyone behind."""
    a, _, c, d = fill(rooms, 4)
    rooms.leave(ROOM, a.token)
    head = rooms.check_in(ROOM, c.token)
    behind = rooms.check_in(ROOM, d.token)
    assert head.state == "admitted"
    assert (behind.state, behind.position) == ("waiting", 1)


def test_joiner_does_not_jump_line_when_seat_frees(rooms, clock):
    """A newcomer never takes a freed seat while people wait."""
    a, _, c = fill(rooms, 3)
    rooms.leave(ROOM, a.token)
    newcomer = rooms.join(ROOM)
    assert newcomer.state == "waiting"
    assert rooms.check_in(ROOM, c.token).state == "admitted"


def test_checkin_reports_position_and_people_ahead(rooms):
    """Every check-in returns the current position and the number ahead."""
    tickets = fill(rooms, 6)
    last = rooms.check_in(ROOM, tickets[-1].token)
    assert (last.position, last.ahead, last.waiting) == (4, 3, 4)


def test_missed_checkins_drop_out_and_everyone_moves_up(rooms, clock):
    """A waiter who stops checking in drops out after dropout_seconds."""
    _, _, c, d, e = fill(rooms, 5)
    clock.advance(20)
    rooms.check_in(ROOM, d.token)
    rooms.check_in(ROOM, e.token)
    clock.advance(15)  # c last checked in 35 s ago, d and e 15 s ago
    assert rooms.check_in(ROOM, d.token).position == 1
    assert rooms.check_in(ROOM, e.token).position == 2
    with pytest.raises(TicketGone) as gone:
        rooms.check_in(ROOM, c.token)
    assert gone.value.why == "dropped"


def test_checkin_exactly_at_deadline_keeps_place(rooms, clock):
    """The place is kept up to and including the deadline."""
    _, _, c = fill(rooms, 3)
    clock.advance(30)
    assert rooms.check_in(ROOM, c.token).position == 1


def test_sweep_clears_dropouts_nobody_polls(rooms, clock, db, keys):
    """The background sweep drops overdue waiters even when no request comes."""
    fill(rooms, 12)
    clock.advance(31)
    assert rooms.sweep(ROOM) >= 10
    assert db.zcard(keys.room(ROOM).line) == 0


def test_upkeep_per_call_is_bounded(db, keys, clock):
    """One request clears at most a batch of dropouts; the sweep finishes the rest."""
    rooms = engine(db, keys, clock, batch=5)
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 30})
    fill(rooms, 21)
    clock.advance(31)
    fresh = rooms.join(ROOM)
    assert db.zcard(keys.room(ROOM).line) > 5
    rooms.sweep(ROOM)
    assert db.zrange(keys.room(ROOM).line, 0, -1) == [fresh.token]


def test_overdue_ticket_cannot_renew_itself(db, keys, clock):
    """A ticket past its deadline ends on its own check-in, even if upkeep missed it."""
    rooms = engine(db, keys, clock, batch=1)
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 30})
    tickets = fill(rooms, 5)
    clock.advance(31)
    with pytest.raises(TicketGone):
        rooms.check_in(ROOM, tickets[-1].token)


def test_offered_seat_passes_on_when_unclaimed(rooms, clock):
    """A head of line that never claims its offered seat loses it to the next."""
    a, b, c, d = fill(rooms, 4)
    rooms.check_in(ROOM, b.token)
    rooms.leave(ROOM, a.token)  # c is offered the seat
    for _ in range(3):
        clock.advance(12)
        rooms.check_in(ROOM, d.token)
        rooms.check_in(ROOM, b.token)
    assert rooms.check_in(ROOM, d.token).state == "admitted"
    with pytest.raises(TicketGone) as gone:
        rooms.check_in(ROOM, c.token)
    assert gone.value.why == "unclaimed"


def test_offered_seat_claimed_by_checkin(rooms, clock):
    """The head claims its offered seat with a check-in and then keeps it."""
    a, _, c = fill(rooms, 3)
    rooms.leave(ROOM, a.token)
    assert rooms.check_in(ROOM, c.token).state == "admitted"
    clock.advance(200)
    assert rooms.check_in(ROOM, c.token).state == "admitted"


def test_grace_keeps_seat_through_a_reload(rooms, clock):
    """A dropped connection that comes back within grace_seconds keeps the seat."""
    a, _, c = fill(rooms, 3)
    rooms.presence(ROOM, a.token, "open", hold=15)
    rooms.presence(ROOM, a.token, "close")
    clock.advance(9)
    rooms.check_in(ROOM, c.token)
    assert rooms.presence(ROOM, a.token, "open", hold=15).state == "admitted"
    assert rooms.check_in(ROOM, c.token).state == "waiting"


def test_seat_passes_on_after_grace(rooms, clock):
    """Away longer than grace_seconds, the seat goes to the head of the line."""
    a, _, c = fill(rooms, 3)
    rooms.presence(ROOM, a.token, "open", hold=15)
    rooms.presence(ROOM, a.token, "close")
    clock.advance(11)
    assert rooms.check_in(ROOM, c.token).state == "admitted"
    with pytest.raises(TicketGone) as gone:
        rooms.presence(ROOM, a.token, "open", hold=15)
    assert gone.value.why == "grace"
    ended = [e for e in Reports(rooms).audit(ROOM, 50) if e.kind == "seat_end"]
    assert [(e.code, e.detail) for e in ended] == [(a.support_code, "grace")]  # in the log


def test_heartbeats_hold_the_seat(rooms, clock):
    """An open connection's beats keep the seat far past the session length."""
    a, _, c = fill(rooms, 3)
    rooms.presence(ROOM, a.token, "open", hold=15)
    for _ in range(60):
        clock.advance(10)
        rooms.presence(ROOM, a.token, "beat", hold=15)
        rooms.check_in(ROOM, c.token)
    assert rooms.check_in(ROOM, a.token).state == "admitted"


def test_dead_server_connection_lapses(rooms, clock):
    """A socket whose server died (no close, no beats) frees the seat after its hold."""
    a, _, c = fill(rooms, 3)
    rooms.presence(ROOM, a.token, "open", hold=15)
    clock.advance(16)
    assert rooms.check_in(ROOM, c.token).state == "admitted"


def test_session_expires_without_checkins(rooms, clock):
    """An admitted visitor with no connection and no check-in gives the seat up."""
    a, b, c = fill(rooms, 3)
    for _ in range(12):  # 300 s: b and c check in, a does not
        clock.advance(25)
        rooms.check_in(ROOM, b.token)
        rooms.check_in(ROOM, c.token)
    assert rooms.check_in(ROOM, c.token).state == "waiting"
    clock.advance(1)
    assert rooms.check_in(ROOM, c.token).state == "admitted"
    assert rooms.check_in(ROOM, b.token).state == "admitted"
    with pytest.raises(TicketGone) as gone:
        rooms.check_in(ROOM, a.token)
    assert gone.value.why == "session"


def test_presence_needs_a_seat(rooms):
    """A waiting ticket cannot open a room connection."""
    *_, c = fill(rooms, 3)
    with pytest.raises(NotSeated):
        rooms.presence(ROOM, c.token, "open", hold=15)


def test_same_identity_gets_same_ticket(rooms):
    """Joining again with the same identity returns the same ticket, not a second place."""
    fill(rooms, 2)
    first = rooms.join(ROOM, identity="visitor:1")
    again = rooms.join(ROOM, identity="visitor:1")
    assert again.token == first.token
    assert again.waiting == 1


def test_identity_rejoins_at_back_after_leaving(rooms):
    """After leaving, the same identity joins anew at the back of the line."""
    fill(rooms, 2)
    first = rooms.join(ROOM, identity="visitor:1")
    rooms.join(ROOM, identity="visitor:2")
    rooms.leave(ROOM, first.token)
    again = rooms.join(ROOM, identity="visitor:1")
    assert again.token != first.token
    assert again.position == 2


def test_leave_is_idempotent(rooms):
    """Leaving twice is fine and changes nothing the second time."""
    a, _, c = fill(rooms, 3)
    rooms.leave(ROOM, a.token)
    assert rooms.leave(ROOM, a.token).state == "ended"
    assert rooms.check_in(ROOM, c.token).state == "admitted"


def test_unknown_and_ended_tickets(rooms):
    """An unknown token is not found; a left one is gone, with the reason."""
    (a,) = fill(rooms, 1)
    with pytest.raises(TicketNotFound):
        rooms.check_in(ROOM, "no-such-token")
    rooms.leave(ROOM, a.token)
    with pytest.raises(TicketGone) as gone:
        rooms.check_in(ROOM, a.token)
    assert gone.value.why == "left"


def test_ended_tickets_are_forgotten_after_retention(rooms, clock, db, keys):
    """Ended tickets answer 'gone' for an hour, then are forgotten (bounded memory)."""
    (a,) = fill(rooms, 1)
    rooms.leave(ROOM, a.token)
    clock.advance(3601)
    rooms.sweep(ROOM)
    assert db.hlen(keys.room(ROOM).tickets) == 0
    with pytest.raises(TicketNotFound):
        rooms.check_in(ROOM, a.token)


def test_every_runtime_key_has_a_ttl(rooms, db, keys):
    """Abandoned rooms do not leak: every key but the settings has a TTL."""
    a, *_ = [rooms.join(ROOM, identity=f"visitor:{i}") for i in range(4)]
    rooms.leave(ROOM, a.token)
    room = keys.room(ROOM)
    for key in (room.seq, room.line, room.checkin, room.seats, room.tickets, room.ended,
                room.stats, room.clock, room.audit, room.codes):  # fmt: skip
        assert db.exists(key), key
    for key in room.all():
        if key != room.settings and db.exists(key):
            assert db.ttl(key) > 0, key


def test_paused_room_queues_and_admits_nobody(rooms):
    """Paused: joins queue up even with free seats; reopening admits the line in order."""
    rooms.configure(ROOM, {"status": "paused"})
    a, b, c = fill(rooms, 3)
    assert [t.state for t in (a, b, c)] == ["waiting"] * 3
    rooms.configure(ROOM, {"status": "open"})
    assert rooms.check_in(ROOM, a.token).state == "admitted"
    assert rooms.check_in(ROOM, b.token).state == "admitted"
    assert rooms.check_in(ROOM, c.token).position == 1


def test_closed_room_refuses_joins_but_serves_its_line(rooms):
    """Closed: new joins are refused; people already waiting are still let in."""
    a, _, c = fill(rooms, 3)
    rooms.configure(ROOM, {"status": "closed"})
    with pytest.raises(RoomClosed):
        rooms.join(ROOM)
    rooms.leave(ROOM, a.token)
    assert rooms.check_in(ROOM, c.token).state == "admitted"


def test_raising_capacity_admits_from_the_line(rooms):
    """A larger capacity lets the head of the line in at once."""
    *_, c, d = fill(rooms, 4)
    rooms.configure(ROOM, {"capacity": 3})
    assert rooms.check_in(ROOM, c.token).state == "admitted"
    assert rooms.check_in(ROOM, d.token).position == 1


def test_lowering_capacity_evicts_nobody(rooms):
    """Below the seats held, nobody is thrown out; nobody is let in until it fits."""
    a, b, c = fill(rooms, 3)
    rooms.configure(ROOM, {"capacity": 1})
    rooms.leave(ROOM, a.token)
    assert rooms.check_in(ROOM, b.token).state == "admitted"
    assert rooms.check_in(ROOM, c.token).state == "waiting"


def test_line_length_limit_refuses_and_changes_nothing(rooms, db, keys):
    """max_line_length: a join past it is refused and leaves no trace."""
    rooms.configure(ROOM, {"max_line_length": 2})
    fill(rooms, 4)
    before = db.hlen(keys.room(ROOM).tickets)
    with pytest.raises(JoinRefused):
        rooms.join(ROOM, identity="visitor:x")
    assert db.hlen(keys.room(ROOM).tickets) == before
    assert not db.hexists(keys.room(ROOM).identities, "visitor:x")


def test_admission_control_by_people_ahead(rooms):
    """A join that would have more than max_ahead people in front is refused."""
    fill(rooms, 5)
    with pytest.raises(JoinRefused):
        rooms.join(ROOM, max_ahead=2)
    assert rooms.join(ROOM, max_ahead=3).position == 4


def test_unknown_room(rooms):
    """Joining a room that does not exist is refused."""
    with pytest.raises(RoomNotFound):
        rooms.join("nowhere")
    with pytest.raises(RoomNotFound):
        rooms.join("Bad Name!")


def test_settings_are_validated(rooms):
    """Bad settings are refused with the reason and change nothing."""
    for bad in ({"capacity": 0}, {"capacity": "3"}, {"capacity": True}, {"status": "gone"},
                {"colour": 1}, {"dropout_seconds": 1.5}):  # fmt: skip
        with pytest.raises(InvalidInput):
            rooms.configure(ROOM, bad)
    assert rooms.find_settings(ROOM).capacity == 2


def test_delete_removes_every_key(rooms, db, keys):
    """Deleting a room removes all of its keys and its index entry."""
    fill(rooms, 4)
    assert rooms.delete(ROOM)
    assert db.exists(*keys.room(ROOM).all()) == 0
    assert rooms.names() == []
    assert not rooms.delete(ROOM)


def test_participants_in_seating_order(rooms, clock, reports):
    """The participant list names who holds a seat, in the order they got it."""
    rooms.join(ROOM, name="Ada")
    clock.advance(1)
    rooms.join(ROOM, name="Bo")
    rooms.join(ROOM, name="Cy")
    assert [p.name for p in reports.participants(ROOM)] == ["Ada", "Bo"]


def test_participants_seated_at_once_keep_one_order(rooms, clock, reports):
    """Seated in the same second (a drop's start), they are listed by name, however
    their seats' deadlines move with their check-ins."""
    zed = rooms.join(ROOM, name="Zed")
    rooms.join(ROOM, name="amy")
    assert [p.name for p in reports.participants(ROOM)] == ["amy", "Zed"]
    clock.advance(1)
    rooms.check_in(ROOM, zed.token)  # Zed's seat now lasts longest
    assert [p.name for p in reports.participants(ROOM)] == ["amy", "Zed"]


def test_summaries(rooms, reports):
    """The room list gives seats taken, people waiting and status."""
    fill(rooms, 3)
    (summary,) = reports.summaries()
    assert summary._asdict() == {
        "name": ROOM, "capacity": 2, "active": 2, "waiting": 1, "status": "open",
        "notice": "",
    }  # fmt: skip


def test_sequence_not_last_score(rooms, db, keys):
    """Line order comes from the room's sequence, which never goes back."""
    *_, c, d = fill(rooms, 4)
    rooms.leave(ROOM, d.token)
    e = rooms.join(ROOM)
    line = keys.room(ROOM).line
    assert db.zscore(line, e.token) > db.zscore(line, c.token) + 1


def test_ticket_state_is_a_read_only_look(rooms, clock, reports):
    """Looking at a ticket's state does not check it in."""
    a, _, c = fill(rooms, 3)
    assert reports.ticket_state(ROOM, a.token) == "admitted"
    assert reports.ticket_state(ROOM, c.token) == "waiting"
    assert reports.ticket_state(ROOM, "nope") is None
    clock.advance(31)
    reports.ticket_state(ROOM, c.token)
    with pytest.raises(TicketGone):
        rooms.check_in(ROOM, c.token)
