"""A waitlist's notices beyond admission (issue 13): the confirmation at join, lapsing
of admitted entries not claimed in time (the next in line admitted in their place), and
the "nearly in" notice, once per entry; all with time controlled."""

from __future__ import annotations

import pytest
from building import sign_up

from webapp.domain.claims import Claim, Claims
from webapp.domain.waitlist import SweepResult

ROOM = "list"
HOUR = 3600


@pytest.fixture
def claims(rooms):
    return Claims(rooms.client, rooms.keys, rooms.scripts)


def notices(waitlists, kind):
    return [m.entry for m in waitlists.outbox(ROOM, count=10_000) if m.kind == kind]


def claim(claims, entry, now):
    return claims.claim(Claim(ROOM, entry, "admitted", now + HOUR), now)


# -- the confirmation ---------------------------------------------------------------


def test_a_new_entry_gets_one_confirmation_notice_in_its_language(rooms, waitlists):
    """Joining writes a confirm message with the entry's language; joining again with
    the same mailbox writes none; an unknown language is kept as en."""
    rooms.configure(ROOM, {"kind": "waitlist"})
    ann = waitlists.join(ROOM, "Ann", "ann@example.org", language="de")
    waitlists.join(ROOM, "Ann", "ANN@example.org", language="de")
    bob = waitlists.join(ROOM, "Bob", "bob@example.org", language="xx")
    outbox = waitlists.outbox(ROOM)
    assert [(m.kind, m.entry, m.lang) for m in outbox] == [
        ("confirm", ann.id, "de"),
        ("confirm", bob.id, "en"),
    ]


# -- lapsing ------------------------------------------------------------------------


def test_an_unclaimed_admission_lapses_and_the_next_is_admitted(
    rooms, waitlists, claims, clock, r, keys, reports
):
    """Past claim_seconds the sweep lapses the entry (told: lapsed), admits the next
    confirmed entry in its place (offered: admitted, with its own deadline), and the
    lapsed entry's claim is refused and changes nothing."""
    rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": HOUR})
    ids = sign_up(waitlists, 2)
    unconfirmed = sign_up(waitlists, 1, start=2, confirm=False)
    last = sign_up(waitlists, 1, start=3)
    rooms.admit(ROOM, 1)
    assert notices(waitlists, "admitted") == ids[:1]
    (message,) = [m for m in waitlists.outbox(ROOM) if m.kind == "admitted"]
    assert message.until == clock.now + HOUR

    clock.advance(HOUR - 1)
    assert waitlists.sweep_turn(ROOM) == SweepResult(0, 0, 0)  # not yet
    clock.advance(1)
    assert waitlists.sweep_turn(ROOM) == SweepResult(admitted=1, lapsed=1, near=0)
    assert waitlists.position(ROOM, ids[0]).state == "lapsed"
    assert waitlists.position(ROOM, ids[1]).state == "admitted"
    assert notices(waitlists, "lapsed") == ids[:1]
    assert notices(waitlists, "admitted") == ids[:2]
    assert waitlists.figures(ROOM).admitted == 1
    audit = [(e.kind, e.detail) for e in reports.audit(ROOM, 100, ["lapse", "admit"])]
    assert ("lapse", "not claimed in time") in audit
    assert any(kind == "admit" and detail.startswith("in place of ") for kind, detail in audit)

    assert claim(claims, ids[0], clock.now) == "lapsed"
    assert r.hlen(keys.claims(ROOM)) == 0
    assert waitlists.sweep_turn(ROOM) == SweepResult(0, 0, 0)  # told once only

    # The replacement has its own window; claimed in time, it never lapses
    assert claim(claims, ids[1], clock.now + HOUR - 1) == "claimed"
    clock.advance(2 * HOUR)
    assert waitlists.sweep_turn(ROOM).lapsed == 0
    assert waitlists.position(ROOM, ids[1]).state == "admitted"
    assert waitlists.position(ROOM, unconfirmed[0]).state == "waiting"
    assert waitlists.position(ROOM, last[0]).state == "waiting"


def test_a_claim_past_the_deadline_is_refused_before_the_sweep_comes(
    rooms, waitlists, claims, clock
):
    """The deadline holds even if no sweep has run: the claim is refused as lapsed."""
    rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": HOUR})
    (entry,) = sign_up(waitlists, 1)
    rooms.admit(ROOM, 1)
    assert claim(claims, entry, clock.now + HOUR) == "lapsed"
    assert claim(claims, entry, clock.now + HOUR - 1) == "claimed"
    assert claim(claims, entry, clock.now + HOUR - 1) == "used"


def test_lapses_are_bounded_per_turn_and_oldest_first(rooms, waitlists, clock):
    """With more lapses due than one turn handles, the earliest deadlines go first and
    the rest on later turns; each lapse admits one replacement while any is left."""
    rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": HOUR})
    ids = sign_up(waitlists, 130)
    rooms.admit(ROOM, 110)
    clock.advance(1)
    rooms.admit(ROOM, 5)  # ids[110:115], a later deadline
    clock.advance(HOUR + 1)
    first = waitlists.sweep_turn(ROOM)
    assert first == SweepResult(admitted=15, lapsed=100, near=0)
    assert set(notices(waitlists, "lapsed")) < set(ids[:110])  # one deadline: any order
    second = waitlists.sweep_turn(ROOM)
    assert second.lapsed == 15  # the rest of the first batch, and the later five
    assert waitlists.figures(ROOM).waiting == 0


def test_a_closed_room_passes_no_place_on(rooms, waitlists, clock):
    """In a closed room a lapse frees the place without admitting anyone."""
    rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": HOUR})
    ids = sign_up(waitlists, 2)
    rooms.admit(ROOM, 1)
    rooms.configure(ROOM, {"status": "closed"})
    clock.advance(HOUR)
    assert waitlists.sweep_turn(ROOM) == SweepResult(admitted=0, lapsed=1, near=0)
    assert waitlists.position(ROOM, ids[1]).state == "waiting"


# -- nearly in ----------------------------------------------------------------------


def test_the_top_entries_are_told_once_that_they_are_nearly_in(rooms, waitlists):
    """notify_near=3: the first three confirmed entries in order get one near message
    each; as the line moves up, the next ones do; nobody twice; unconfirmed entries
    are skipped until they confirm."""
    rooms.configure(ROOM, {"kind": "waitlist", "notify_near": 3})
    ids = sign_up(waitlists, 2)
    late = sign_up(waitlists, 1, start=2, confirm=False)
    ids += sign_up(waitlists, 4, start=3)
    assert waitlists.sweep_turn(ROOM).near == 3
    assert notices(waitlists, "near") == [ids[0], ids[1], ids[2]]
    assert waitlists.sweep_turn(ROOM).near == 0
    rooms.admit(ROOM, 2)
    assert waitlists.sweep_turn(ROOM).near == 2
    assert notices(waitlists, "near") == ids[:5]
    waitlists.confirm(ROOM, late[0])  # now first in line (it joined earlier)
    assert waitlists.sweep_turn(ROOM).near == 1
    assert notices(waitlists, "near") == [*ids[:5], late[0]]
    for _ in range(3):
        assert waitlists.sweep_turn(ROOM).near == 0


def test_a_long_top_is_covered_over_several_turns(rooms, waitlists):
    """notify_near beyond one turn's look (500 places): covered in order over turns,
    each entry told once."""
    rooms.configure(ROOM, {"kind": "waitlist", "notify_near": 700})
    ids = sign_up(waitlists, 800)
    assert waitlists.sweep_turn(ROOM).near == 500
    assert waitlists.sweep_turn(ROOM).near == 200
    assert waitlists.sweep_turn(ROOM).near == 0
    assert waitlists.sweep_turn(ROOM).near == 0
    assert notices(waitlists, "near") == ids[:700]


def test_no_near_notice_without_the_setting(rooms, waitlists):
    """notify_near unset: no near messages."""
    rooms.configure(ROOM, {"kind": "waitlist"})
    sign_up(waitlists, 3)
    assert waitlists.sweep_turn(ROOM).near == 0
    assert notices(waitlists, "near") == []


def test_signing_up_again_unconfirmed_sends_another_confirmation_within_limits(
    rooms, waitlists, clock
):
    """An unconfirmed entry that signs up again gets another confirmation (nth 2, 3),
    at most one an hour and three in all; a confirmed one gets none."""
    rooms.configure(ROOM, {"kind": "waitlist"})
    ann = waitlists.join(ROOM, "Ann", "ann@example.org")
    bob = waitlists.join(ROOM, "Bob", "bob@example.org")
    waitlists.confirm(ROOM, bob.id)
    for _ in range(6):
        waitlists.join(ROOM, "Ann", "ann@example.org")
        waitlists.join(ROOM, "Bob", "bob@example.org")
        clock.advance(HOUR / 2)
    sent = [(m.entry, m.nth) for m in waitlists.outbox(ROOM) if m.kind == "confirm"]
    assert sent == [(ann.id, 1), (bob.id, 1), (ann.id, 2), (ann.id, 3)]
