"""What admins do to a room, through Visits (the one home of every side effect), and
what the panel reads back: manual admission, batch admission, removal, moves, notices,
support codes, the audit log, the charts' history and the estimates' accuracy."""

from __future__ import annotations

import pytest
from building import engine
from race import admit_at_once

from webapp.domain.announcer import ended_frame
from webapp.domain.chat import room_chat_id
from webapp.domain.join_limits import NO_LIMITS
from webapp.domain.rooms import NotWaiting, Ticket, TicketGone, public_id
from webapp.domain.tickets import CODE_CHARS, new_ticket


def line_of(rooms, n, room="hall"):
    return [rooms.join(room, name=f"P{i}").token for i in range(n)]


def test_a_manual_room_seats_nobody_by_itself(rooms, clock):
    """Manual admission: free seats stay free and everyone waits for an admin."""
    rooms.configure("hall", {"capacity": 3, "admission_mode": "manual"})
    tokens = line_of(rooms, 3)
    clock.advance(1)
    rooms.sweep("hall")
    assert [rooms.check_in("hall", t).position for t in tokens] == [1, 2, 3]


def test_batch_admission_takes_the_head_and_is_idempotent(rooms, visits, told, reports):
    """Admit 2: the first two are offered seats; the same request id admits nobody new."""
    rooms.configure("hall", {"capacity": 5, "admission_mode": "manual"})
    tokens = line_of(rooms, 4)
    first = visits.admit("hall", 2, request_id="r-1", who="ann")
    assert first.tokens == tuple(tokens[:2]) and not first.replay
    assert told.changed_rooms == ["hall"]
    again = visits.admit("hall", 2, request_id="r-1", who="ann")
    assert again.tokens == first.tokens and again.replay
    assert reports.summary("hall").active == 2
    assert rooms.check_in("hall", tokens[0]).state == "admitted"  # the offer is claimed
    assert rooms.check_in("hall", tokens[2]).position == 1


def test_admission_stops_at_free_seats_unless_overridden(rooms, visits, reports):
    """Capacity holds unless the admin explicitly overrides it."""
    rooms.configure("hall", {"capacity": 2, "admission_mode": "manual"})
    line_of(rooms, 5)
    assert len(visits.admit("hall", 5, who="ann").tokens) == 2
    assert visits.admit("hall", 5, who="ann").tokens == ()
    assert len(visits.admit("hall", 2, override=True, who="ann").tokens) == 2
    assert reports.summary("hall").active == 4


def test_two_admins_at_once_never_admit_one_person_twice(r, keys, redis_url, reports):
    """Two processes each admit 50 from a line of 80: exactly 80 distinct, each audited
    once; replaying a request id admits nobody."""
    rooms = engine(r, keys)  # on Redis's clock, as the other processes are
    rooms.configure("hall", {"capacity": 1, "admission_mode": "manual"})
    everyone = set(line_of(rooms, 80))
    admitted = admit_at_once(redis_url, keys.prefix, "hall", 50, override=True)
    tokens = [t for a in admitted for t in a.tokens]
    assert len(tokens) == 80 and set(tokens) == everyone
    admits = reports.audit("hall", count=1000, kinds=["admit"])
    assert len(admits) == 80
    assert {a.who for a in admits} == {"admin-0", "admin-1"}
    assert rooms.admit("hall", 50, request_id="admin-0", override=True).replay
    assert len(reports.audit("hall", count=1000, kinds=["admit"])) == 80


def test_removal_ends_the_ticket_leaves_the_chat_and_is_audited(
    rooms, visits, chats, told, reports
):
    """An admin removes someone seated: the seat frees, the chat forgets them, their
    own sockets are told to close and the room's to show the figures again."""
    rooms.configure("hall", {"capacity": 1})
    seated = rooms.join("hall", name="Ann")
    chats.join(room_chat_id("hall"), public_id(seated.token), 0.0)
    visits.remove("hall", seated.token, who="boss")
    assert told.frames == [("hall", ended_frame(seated.token, "removed"))]
    assert told.changed_rooms == ["hall"]
    with pytest.raises(TicketGone) as gone:
        rooms.check_in("hall", seated.token)
    assert gone.value.why == "removed"
    assert chats.members(room_chat_id("hall")) == {}
    entry = reports.audit("hall", kinds=["remove"])[0]
    assert (entry.who, entry.name, entry.code) == ("boss", "Ann", seated.support_code)


def test_moving_someone_to_the_front_and_back(rooms, visits, reports):
    """Move to 1: at the head; to 3: third; a seated person cannot be moved."""
    rooms.configure("hall", {"capacity": 1})
    seated = rooms.join("hall")
    a, b, c, d = line_of(rooms, 4)
    visits.move("hall", d, 1, who="boss")
    assert [rooms.check_in("hall", t).position for t in (d, a, b, c)] == [1, 2, 3, 4]
    visits.move("hall", d, 3, who="boss")
    assert [rooms.check_in("hall", t).position for t in (a, b, d, c)] == [1, 2, 3, 4]
    visits.move("hall", a, 99, who="boss")
    assert rooms.check_in("hall", a).position == 4
    with pytest.raises(NotWaiting):
        visits.move("hall", seated.token, 1, who="boss")
    assert [e.detail for e in reports.audit("hall", kinds=["move"])] == ["1->4", "1->3", "4->1"]


def test_a_notice_reaches_sockets_at_once_and_check_ins_after(rooms, visits, told, reports):
    """The notice is published to the room and carried by every later reply."""
    rooms.configure("hall", {"capacity": 1})
    rooms.join("hall")
    waiting = rooms.join("hall").token
    visits.notice("hall", "  Doors   close at ten  ", who="boss")
    assert told.frames == [("hall", {"type": "notice", "text": "Doors close at ten"})]
    assert rooms.check_in("hall", waiting).notice == "Doors close at ten"
    visits.notice("hall", "", who="boss")
    assert rooms.check_in("hall", waiting).notice == ""
    assert [e.kind for e in reports.audit("hall")][:2] == ["notice_cleared", "notice"]


def test_a_room_made_again_does_not_replay_the_old_rooms_admissions(rooms, reports):
    """A request id is the room's: after the room is deleted and made again under the
    same name, the same id admits from the new line (an API client's fixed keys)."""
    rooms.configure("hall", {"capacity": 5, "admission_mode": "manual"})
    old = line_of(rooms, 2)
    assert rooms.admit("hall", 1, request_id="wave-1").tokens == (old[0],)
    assert rooms.delete("hall")
    rooms.configure("hall", {"capacity": 5, "admission_mode": "manual"})
    new = line_of(rooms, 2)
    first = rooms.admit("hall", 1, request_id="wave-1")
    assert first.tokens == (new[0],) and not first.replay
    again = rooms.admit("hall", 1, request_id="wave-1")
    assert again.tokens == (new[0],) and again.replay
    assert reports.summary("hall").active == 1


def test_support_codes_find_people(rooms, reports):
    """Every ticket has a short code; an admin finds the person by it, in any case."""
    rooms.configure("hall", {"capacity": 1})
    rooms.join("hall", name="Ann")
    bob = rooms.join("hall", name="Bob")
    assert len(bob.support_code) == 6 and bob.support_code.isalnum()
    found = reports.find("hall", f" {bob.support_code.lower()} ")
    assert found is not None and (found.name, found.position) == ("Bob", 1)
    assert [p.name for p in reports.search("hall", "bo")] == ["Bob"]
    assert reports.find("hall", "ZZZZZZ") is None


def test_support_codes_are_unique_in_a_room(rooms):
    """A thousand tickets, a thousand codes."""
    rooms.configure("hall", {"capacity": 1})
    codes = {rooms.join("hall").support_code for _ in range(1000)}
    assert len(codes) == 1000


def test_a_proposed_code_in_use_gets_another(rooms):
    """The join proposes a random code; one already in use is not given twice."""
    rooms.configure("hall", {"capacity": 1})
    joiners = [
        (token, "", "", "", "", "", "", "ABC123", "", NO_LIMITS) for token in ("t" * 24, "u" * 24)
    ]
    first, second = rooms.join_many("hall", joiners)
    assert isinstance(first, Ticket) and isinstance(second, Ticket)
    assert first.support_code == "ABC123" and len(second.support_code) == 6
    assert second.support_code != "ABC123" and set(second.support_code) <= set(CODE_CHARS)
    drawn = {new_ticket()[1] for _ in range(200)}
    assert len(drawn) == 200 and all(len(c) == 6 and set(c) <= set(CODE_CHARS) for c in drawn)


def test_the_line_pages_in_order(rooms, reports):
    """Pages of 50 follow the line; seated people are listed apart."""
    rooms.configure("hall", {"capacity": 2})
    line_of(rooms, 120)
    first, third = reports.line("hall", 0), reports.line("hall", 100)
    assert first.total == 118 and len(first.people) == 50
    assert [p.position for p in first.people] == list(range(1, 51))
    assert [p.position for p in third.people] == list(range(101, 119))
    assert {p.name for p in reports.seated("hall")} == {"P0", "P1"}


def test_history_counts_per_minute_and_samples_the_line(rooms, reports, clock):
    """Joins and admissions are counted per minute; the sweep samples the line."""
    rooms.configure("hall", {"capacity": 1})
    line_of(rooms, 4)
    rooms.sweep("hall")
    history = reports.history("hall", clock.now, minutes=3)
    assert history["joined"][-1] == 4 and history["admitted"][-1] == 1
    assert history["w"][-1] == 3 and history["s"][-1] == 1
    assert history["w"][0] is None  # no sample in a minute nothing ran


def test_accuracy_scores_the_wait_predicted_at_join(rooms, visits, reports, clock):
    """A prediction kept at join is scored at admission: error and inside-the-range."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 600})
    seated = rooms.join("hall").token
    waiting = rooms.join("hall").token
    rooms.predict("hall", waiting, 100.0, 80.0, 130.0)
    clock.advance(120)
    visits.end("hall", seated)
    score = reports.accuracy("hall", clock.now, window=3600)
    assert score.scored == 1
    assert score.median_error == pytest.approx(20 / 120)
    assert score.in_range == 1.0


def test_accuracy_reads_the_newest_admissions(rooms, visits, reports, clock, monkeypatch):
    """Past the most it reads, the accuracy figures are the newest admissions', in the
    order they came: of four scored, the last two (read at most 2)."""
    monkeypatch.setattr("webapp.domain.reports.ACCURACY_READ", 2)
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 600})
    seated = rooms.join("hall").token
    for predicted in (10.0, 20.0, 30.0, 40.0):
        waiting = rooms.join("hall").token
        rooms.predict("hall", waiting, predicted, predicted - 5, predicted + 5)
        clock.advance(10)
        visits.end("hall", seated)
        assert rooms.check_in("hall", waiting).seated
        seated = waiting
    score = reports.accuracy("hall", clock.now, window=3600)
    assert score.scored == 2
    assert [wait for _, wait, _ in score.points] == [30.0, 40.0]


def test_an_admin_lets_one_person_in_from_anywhere_in_line(rooms, visits):
    """Admit one: that person is offered a seat; someone not waiting is refused."""
    rooms.configure("hall", {"capacity": 2, "admission_mode": "manual"})
    a, b, c = line_of(rooms, 3)
    assert visits.admit_one("hall", c, override=False, who="boss").tokens == (c,)
    assert rooms.check_in("hall", c).seated
    assert rooms.check_in("hall", a).position == 1
    with pytest.raises(NotWaiting):
        visits.admit_one("hall", c, override=False, who="boss")
    assert visits.admit_one("hall", b, override=False, who="boss").tokens == (b,)
    assert visits.admit_one("hall", a, override=False, who="boss").tokens == ()  # full
    assert visits.admit_one("hall", a, override=True, who="boss").tokens == (a,)


def test_the_upkeep_around_an_admins_action_is_the_engines(rooms, visits, reports):
    """Removing someone lets the next in by the engine's rule: audited as the engine."""
    rooms.configure("hall", {"capacity": 1})
    first = rooms.join("hall", name="Ann").token
    rooms.join("hall", name="Bo")
    visits.remove("hall", first, who="boss")
    entries = {(e.kind, e.name): e.who for e in reports.audit("hall")}
    assert entries[("remove", "Ann")] == "boss"
    assert entries[("admit", "Bo")] == "engine"


def test_the_lobby_knows_a_room_whose_estimates_were_poor(rooms, visits, lobby, clock):
    """Twenty admissions, each told 10 s (5 to 15) and waiting 120 s or more: the room
    is hard to predict; a room with nothing scored is not."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 3600})
    rooms.configure("calm", {"capacity": 1})
    seated = rooms.join("hall").token
    waiting = [rooms.join("hall").token for _ in range(20)]
    for token in waiting:
        rooms.predict("hall", token, 10.0, 5.0, 15.0)
    for token in waiting:
        clock.advance(120)
        visits.end("hall", seated)
        seated = token
    assert lobby.reports.cache.hard_to_predict("hall", lobby.reports.now())
    assert not lobby.reports.cache.hard_to_predict("calm", lobby.reports.now())


def test_history_counts_nothing_before_the_room_was_made(rooms, reports, clock):
    """A room made a minute ago has no counts for the minutes before it (None, a gap
    in the charts), not zeros that read as a quiet hour it never had."""
    clock.advance(600)
    rooms.configure("new", {"capacity": 1})
    line_of_room = rooms.join("new")
    assert line_of_room.state == "admitted"
    clock.advance(60)
    history = reports.history("new", clock.now, minutes=5)
    assert history["joined"][:3] == [None, None, None]
    assert history["joined"][-2:] == [1.0, 0.0]
    assert reports.created_at("new") is not None
