"""Waitlist rooms (issue 13, phase 1): sign-up by email, double opt-in, the three
orderings (and the lottery's verification), referral boosts and their anti-gaming
rules, batch and scheduled admission with the outbox; and the order against a
plain-Python model of the rules (hypothesis)."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections import Counter
from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
from building import engine, sign_up
from hypothesis import HealthCheck, given, settings
from race import admit_at_once

from webapp.domain.draw import (
    DRAWN,
    MAX_POINTS,
    TWO32,
    commitment_of,
    draw_rank,
    priority_score,
    verify_draw,
)
from webapp.domain.emails import EmailRefused, normalise_email
from webapp.domain.rooms import (
    DrawPending,
    JoinRefused,
    NotWaiting,
    RoomClosed,
    SettingsConflict,
)
from webapp.domain.settings import BY_NAME
from webapp.domain.waitlist import (
    EntryNotFound,
    KnownAddress,
    NotALottery,
    NotAWaitlist,
    NotHeld,
    Waitlists,
)

ROOM = "list"


def make_waitlist(rooms, room=ROOM, **settings):
    rooms.configure(room, {"kind": "waitlist", **settings})


def line(r, keys, room=ROOM):
    return r.zrange(keys.waitlist(room).line, 0, -1)


def kinds_of(reports, *kinds, room=ROOM):
    return [(e.kind, e.who, e.code, e.detail) for e in reports.audit(room, 1000, kinds)][::-1]


def admissions(waitlists, room=ROOM, after="0", count=1000, kind="admitted"):
    """The outbox's messages of one kind (every new entry has a confirm message too)."""
    return [m for m in waitlists.outbox(room, after=after, count=count) if m.kind == kind]


# -- joining ----------------------------------------------------------------------


def test_a_join_answers_a_ticket_and_the_waitlist_fields(rooms, waitlists):
    """A new entry waits at the back, unconfirmed, with a referral code and no points;
    a position read answers the same."""
    make_waitlist(rooms)
    first = waitlists.join(ROOM, "Ann", "ann@example.org")
    second = waitlists.join(ROOM, "Bob", "bob@example.org")
    assert (second.state, second.position, second.ticket.waiting) == ("waiting", 2, 2)
    assert not second.confirmed and second.score == 0
    assert tuple(second.referrals) == (0, 0, 0)
    assert len(second.referral_code) == 8 and second.referral_code.isalnum()
    assert second.ticket.support_code == second.referral_code
    assert first.referral_code != second.referral_code
    assert waitlists.position(ROOM, second.id) == second
    with pytest.raises(EntryNotFound):
        waitlists.position(ROOM, "nobody")


def test_the_same_mailbox_gets_the_same_entry_back(rooms, waitlists):
    """Case, and for Gmail dots, +tags and googlemail.com, name one mailbox; elsewhere a
    dot or a +tag may be another mailbox."""
    make_waitlist(rooms)
    ann = waitlists.join(ROOM, "Ann", "Ann.Lee+news@GoogleMail.com")
    for same in ("annlee@gmail.com", "ANN.LEE@gmail.com", "a.n.n.l.e.e+x@googlemail.com"):
        assert waitlists.join(ROOM, "Ann again", same).id == ann.id
    bob = waitlists.join(ROOM, "Bob", "Bob.Ray@Example.org")
    assert waitlists.join(ROOM, "Bob", "bob.ray@example.ORG").id == bob.id
    assert waitlists.join(ROOM, "Bo", "bobray@example.org").id != bob.id
    assert waitlists.join(ROOM, "Bo", "bob.ray+x@example.org").id != bob.id
    assert normalise_email("Ann.Lee+news@GoogleMail.com").key == "annlee@gmail.com"
    assert normalise_email("Ann.Lee+news@GoogleMail.com").address == "Ann.Lee+news@googlemail.com"


@pytest.mark.parametrize(
    ("email", "reason"),
    [
        ("not an email", "syntax"),
        ("ann@", "syntax"),
        ("ann@@example.org", "syntax"),
        ("ann@localhost", "syntax"),
        (42, "syntax"),
        ("ann@mailinator.com", "disposable"),
        ("ann@eu.Mailinator.com", "disposable"),
        ("ann@yopmail.fr", "disposable"),
    ],
)
def test_bad_and_disposable_emails_are_refused(rooms, waitlists, r, keys, email, reason):
    """Bad syntax (checked without DNS) and disposable domains are refused; nothing is
    written."""
    make_waitlist(rooms)
    with pytest.raises(EmailRefused) as refused:
        waitlists.join(ROOM, "Ann", email)
    assert refused.value.reason == reason
    assert r.hlen(keys.waitlist(ROOM).entries) == 0


def test_live_rooms_and_waitlists_refuse_each_others_joins(rooms, waitlists):
    """A waitlist is joined with an email, a live room on its page."""
    make_waitlist(rooms)
    rooms.configure("live", {})
    with pytest.raises(RoomClosed):
        rooms.join(ROOM, name="Ann")
    with pytest.raises(NotAWaitlist):
        waitlists.join("live", "Ann", "ann@example.org")


def test_a_full_or_closed_waitlist_refuses_newcomers_but_not_members(rooms, waitlists):
    """max_line_length caps the waitlist; a closed one refuses new emails; a member
    still gets the entry back."""
    make_waitlist(rooms, max_line_length=2)
    ann, _bob = sign_up(waitlists, 2, confirm=False)
    with pytest.raises(JoinRefused):
        waitlists.join(ROOM, "Cy", "cy@example.org")
    rooms.configure(ROOM, {"status": "closed", "max_line_length": None})
    with pytest.raises(RoomClosed):
        waitlists.join(ROOM, "Cy", "cy@example.org")
    assert waitlists.join(ROOM, "P0", "p0@example.org").id == ann


# -- fifo and double opt-in --------------------------------------------------------


def test_fifo_admits_confirmed_entries_in_join_order(rooms, waitlists, r, keys):
    """Unconfirmed entries keep their place but are skipped by admission."""
    make_waitlist(rooms)
    a, b, c, d = sign_up(waitlists, 4, confirm=False)
    waitlists.confirm(ROOM, b)
    waitlists.confirm(ROOM, d)
    assert line(r, keys) == [a, b, c, d]
    assert rooms.admit(ROOM, 1).tokens == (b,)
    assert [waitlists.position(ROOM, x).position for x in (a, c, d)] == [1, 2, 3]
    assert rooms.admit(ROOM, 5).tokens == (d,)
    assert line(r, keys) == [a, c]
    admitted = waitlists.position(ROOM, b)
    assert (admitted.state, admitted.position, admitted.ticket.active) == ("admitted", 0, 2)


def test_an_unconfirmed_entry_is_never_admitted(rooms, waitlists):
    """Not by a batch, nor one by one; confirming is idempotent."""
    make_waitlist(rooms)
    [a] = sign_up(waitlists, 1, confirm=False)
    assert rooms.admit(ROOM, 10).tokens == ()
    with pytest.raises(NotWaiting, match="confirmed"):
        rooms.admit(ROOM, 1, token=a)
    assert waitlists.confirm(ROOM, a).confirmed
    assert waitlists.confirm(ROOM, a).confirmed
    assert rooms.admit(ROOM, 1, token=a).tokens == (a,)
    with pytest.raises(NotWaiting):
        rooms.admit(ROOM, 1, token=a)


def test_batch_admission_is_idempotent_and_writes_the_outbox_once(rooms, waitlists, clock):
    """The same request id admits nobody new; each admission has one outbox message
    (kind, entry, email, name, at), written by the admitting script itself."""
    make_waitlist(rooms, capacity=1)
    ids = sign_up(waitlists, 5)
    first = rooms.admit(ROOM, 3, request_id="r-1", who="ann")
    assert first.tokens == tuple(ids[:3]) and not first.replay  # capacity does not apply
    again = rooms.admit(ROOM, 3, request_id="r-1", who="ann")
    assert again.tokens == first.tokens and again.replay
    outbox = admissions(waitlists)
    assert [m.entry for m in outbox] == ids[:3]
    assert {(m.kind, m.at) for m in outbox} == {("admitted", clock.now)}
    assert [(m.email, m.name) for m in outbox] == [(f"p{i}@example.org", f"P{i}") for i in range(3)]
    assert admissions(waitlists, after=outbox[-1].id) == []


def test_two_processes_admitting_at_once_admit_each_entry_once(
    rooms, waitlists, reports, redis_url, keys, clock
):
    """Two processes each admit the top 50 of 80: 80 distinct entries, 80 outbox
    messages, 80 audited admissions."""
    make_waitlist(rooms)
    everyone = set(sign_up(waitlists, 80))
    admitted = admit_at_once(redis_url, keys.prefix, ROOM, 50, now=clock.now)
    tokens = [t for a in admitted for t in a.tokens]
    assert len(tokens) == 80 and set(tokens) == everyone
    outbox = admissions(waitlists, count=1000)
    assert len(outbox) == 80 and {m.entry for m in outbox} == everyone
    assert len(reports.audit(ROOM, count=1000, kinds=["admit"])) == 80


def test_the_schedule_admits_a_batch_once_per_period(rooms, waitlists, clock):
    """admit_every_minutes, admit_batch: the sweep lets a batch in once per period,
    however often it runs; not while the room is paused."""
    make_waitlist(rooms, admit_every_minutes=10, admit_batch=3)
    ids = sign_up(waitlists, 10)
    assert waitlists.sweep(ROOM) == 3
    assert waitlists.sweep(ROOM) == 0
    clock.advance(60)
    assert waitlists.sweep(ROOM) == 0
    clock.advance(600)
    assert waitlists.sweep(ROOM) == 3
    rooms.configure(ROOM, {"status": "paused"})
    clock.advance(600)
    assert waitlists.sweep(ROOM) == 0
    rooms.configure(ROOM, {"status": "open"})
    assert waitlists.sweep(ROOM) == 3
    assert [m.entry for m in admissions(waitlists)] == ids[:9]


# -- priority and referrals --------------------------------------------------------


def test_priority_orders_by_points_then_join_order(rooms, waitlists, r, keys):
    """A confirmed referee moves its referrer ahead of everyone with fewer points;
    equal points keep join order."""
    make_waitlist(rooms, ordering="priority")
    a, b, c = sign_up(waitlists, 3)
    code_c = waitlists.position(ROOM, c).referral_code
    code_b = waitlists.position(ROOM, b).referral_code
    d = waitlists.join(ROOM, "D", "d@example.org", referral_code=code_c, address="10.0.1.1")
    assert line(r, keys) == [a, b, c, d.id]  # pending: nothing yet
    assert waitlists.position(ROOM, c).referrals.pending == 1
    waitlists.confirm(ROOM, d.id)
    assert line(r, keys) == [c, a, b, d.id]
    standing = waitlists.position(ROOM, c)
    assert (standing.position, standing.score, tuple(standing.referrals)) == (1, 100, (1, 0, 0))
    e = waitlists.join(ROOM, "E", "e@example.org", referral_code=code_b.lower())
    waitlists.confirm(ROOM, e.id)
    assert line(r, keys) == [b, c, a, d.id, e.id]  # b and c both 100: b joined first
    assert rooms.admit(ROOM, 2).tokens == (b, c)


def test_fifo_counts_points_but_keeps_join_order(rooms, waitlists, r, keys):
    """In a fifo waitlist referrals still score, but the order is join order."""
    make_waitlist(rooms)
    a, b = sign_up(waitlists, 2)
    code = waitlists.position(ROOM, b).referral_code
    c = waitlists.join(ROOM, "C", "c@example.org", referral_code=code)
    waitlists.confirm(ROOM, c.id)
    assert waitlists.position(ROOM, b).score == 100
    assert line(r, keys) == [a, b, c.id]


def test_the_cap_limits_referral_points(rooms, waitlists, reports):
    """Boosts stop at referral_cap; a referee past it is credited 0 points."""
    make_waitlist(rooms, ordering="priority", referral_boost=100, referral_cap=250)
    [a] = sign_up(waitlists, 1)
    code = waitlists.position(ROOM, a).referral_code
    for i in range(4):
        x = waitlists.join(ROOM, f"X{i}", f"x{i}@example.org", referral_code=code)
        waitlists.confirm(ROOM, x.id)
    standing = waitlists.position(ROOM, a)
    assert (standing.score, standing.referrals.credited) == (250, 4)
    details = [d for *_, d in kinds_of(reports, "referral_credit")]
    assert [d.split(": ")[1] for d in details] == [
        "+100, score 100",
        "+100, score 200",
        "+50, score 250",
        "+0, score 250",
    ]


def test_unconfirmed_referees_earn_nothing(rooms, waitlists):
    """A referee who never confirms leaves its referrer's points alone (pending)."""
    make_waitlist(rooms, ordering="priority")
    [a] = sign_up(waitlists, 1)
    code = waitlists.position(ROOM, a).referral_code
    for i in range(3):
        waitlists.join(ROOM, f"X{i}", f"x{i}@example.org", referral_code=code)
    standing = waitlists.position(ROOM, a)
    assert (standing.score, tuple(standing.referrals)) == (0, (0, 0, 3))


def test_a_referral_code_never_attaches_to_an_existing_entry(rooms, waitlists):
    """A refers B; an unconfirmed A signing up again with B's code (from its own device or
    another) attaches nothing: no loop forms, and B's referral to A is credited once
    (issue 25, hole 3)."""
    make_waitlist(rooms, ordering="priority")
    a = waitlists.join(ROOM, "A", "a@example.org", device="a-phone")
    b = waitlists.join(ROOM, "B", "b@example.org", referral_code=a.referral_code)
    again = waitlists.join(ROOM, "A", "A@example.org", b.referral_code, device="a-phone")
    assert again.id == a.id
    with pytest.raises(KnownAddress):
        waitlists.join(ROOM, "A", "a@example.org", b.referral_code, device="elsewhere")
    assert waitlists.position(ROOM, b.id).referrals.pending == 0
    waitlists.confirm(ROOM, a.id)
    waitlists.confirm(ROOM, b.id)
    assert waitlists.position(ROOM, a.id).score == 100
    assert waitlists.position(ROOM, b.id).score == 0


def test_the_leg_that_closes_a_longer_loop_credits_nothing(rooms, waitlists):
    """C refers B refers A, credited; then A brings C's code: that leg closes a loop."""
    make_waitlist(rooms, ordering="priority")
    a = waitlists.join(ROOM, "A", "a@example.org")
    b = waitlists.join(ROOM, "B", "b@example.org", referral_code=a.referral_code)
    c = waitlists.join(ROOM, "C", "c@example.org", referral_code=b.referral_code)
    waitlists.confirm(ROOM, b.id)
    waitlists.confirm(ROOM, c.id)
    waitlists.join(ROOM, "A", "a@example.org", referral_code=c.referral_code)
    waitlists.confirm(ROOM, a.id)
    scores = [waitlists.position(ROOM, x.id).score for x in (a, b, c)]
    assert scores == [100, 100, 0]


def test_a_confirmed_entry_cannot_take_a_referrer_later(rooms, waitlists):
    """Once confirmed (or once it has a referrer), rejoining with a code changes nothing."""
    make_waitlist(rooms)
    a, b = sign_up(waitlists, 2)
    code = waitlists.position(ROOM, a).referral_code
    waitlists.join(ROOM, "P1", "p1@example.org", referral_code=code)
    assert tuple(waitlists.position(ROOM, a).referrals) == (0, 0, 0)
    assert waitlists.position(ROOM, b).referrals.pending == 0


def test_credits_past_the_hourly_velocity_are_held(rooms, waitlists, reports, clock):
    """referral_velocity 2: a third credit within the hour is held for review; an hour
    later credits flow again."""
    make_waitlist(rooms, ordering="priority", referral_velocity=2)
    [a] = sign_up(waitlists, 1)
    code = waitlists.position(ROOM, a).referral_code
    referees = []
    for i in range(3):
        x = waitlists.join(ROOM, f"X{i}", f"x{i}@example.org", referral_code=code)
        referees.append(waitlists.confirm(ROOM, x.id))
        clock.advance(60)
    standing = waitlists.position(ROOM, a)
    assert (standing.score, tuple(standing.referrals)) == (200, (2, 1, 0))
    assert [(h.referee, h.why) for h in waitlists.held(ROOM)] == [(referees[2].id, "velocity")]
    clock.advance(3600)
    y = waitlists.join(ROOM, "Y", "y@example.org", referral_code=code)
    waitlists.confirm(ROOM, y.id)
    assert waitlists.position(ROOM, a).score == 300
    detail = f"from {referees[2].referral_code}: held (velocity)"
    assert kinds_of(reports, "referral_hold") == [("referral_hold", "engine", code, detail)]


def test_referrals_from_the_referrers_network_device_or_a_busy_address_are_held(
    rooms, waitlists, r, keys
):
    """Same /24 as the referrer, same device id, or more than entries_per_address from
    one address: held. Addresses and device ids are stored only hashed."""
    make_waitlist(rooms, ordering="priority", entries_per_address=2)
    a = waitlists.join(ROOM, "A", "a@example.org", address="192.0.2.10", device="phone-1")
    code = a.referral_code

    def referee(local, **where):
        x = waitlists.join(ROOM, local, f"{local}@example.org", referral_code=code, **where)
        return waitlists.confirm(ROOM, x.id)

    referee("same-net", address="192.0.2.99")
    referee("same-device", address="198.51.100.1", device="phone-1")
    referee("elsewhere", address="203.0.113.1")
    referee("busy-1", address="203.0.113.7")
    referee("busy-2", address="203.0.113.7")  # the address's 2nd entry: still fine
    referee("busy-3", address="203.0.113.7")  # its 3rd: more than 2 from one address
    referee("v6-other", address="2001:db8:1::1")
    assert sorted(h.why for h in waitlists.held(ROOM)) == ["address", "device", "network"]
    standing = waitlists.position(ROOM, a.id)
    assert (standing.score, tuple(standing.referrals)) == (400, (4, 3, 0))
    dump = json.dumps(r.hgetall(keys.waitlist(ROOM).entries)) + str(
        r.hgetall(keys.waitlist(ROOM).addresses)
    )
    for raw in ("192.0.2", "203.0.113", "198.51.100", "2001:db8", "phone-1"):
        assert raw not in dump


def test_an_admin_releases_or_voids_a_held_boost(rooms, waitlists, reports, clock):
    """Release credits the held boost (the cap still applies); void drops it; both are
    audited under the admin's name; neither works twice."""
    make_waitlist(rooms, ordering="priority", referral_cap=150)
    a = waitlists.join(ROOM, "A", "a@example.org", address="192.0.2.1")
    x = waitlists.join(
        ROOM, "X", "x@example.org", referral_code=a.referral_code, address="192.0.2.2"
    )
    y = waitlists.join(
        ROOM, "Y", "y@example.org", referral_code=a.referral_code, address="192.0.2.3"
    )
    z = waitlists.join(
        ROOM, "Z", "z@example.org", referral_code=a.referral_code, address="192.0.2.4"
    )
    for e in (x, y, z):
        waitlists.confirm(ROOM, e.id)
        clock.advance(1)
    held = waitlists.held(ROOM)
    assert [(h.referee, h.referrer, h.referrer_code) for h in held] == [
        (e.id, a.id, a.referral_code) for e in (x, y, z)
    ]
    waitlists.release(ROOM, x.id, who="boss")
    waitlists.release(ROOM, y.id, who="boss")
    waitlists.void(ROOM, z.id, who="boss")
    standing = waitlists.position(ROOM, a.id)
    assert (standing.score, tuple(standing.referrals)) == (150, (2, 0, 0))
    assert waitlists.held(ROOM) == []
    with pytest.raises(NotHeld):
        waitlists.void(ROOM, z.id, who="boss")  # void already
    with pytest.raises(NotHeld):
        waitlists.release(ROOM, x.id, who="boss")  # credited already
    log = kinds_of(reports, "referral_hold", "referral_credit", "referral_void")
    assert [(kind, who) for kind, who, _, _ in log] == [
        ("referral_hold", "engine"),
        ("referral_hold", "engine"),
        ("referral_hold", "engine"),
        ("referral_credit", "boss"),
        ("referral_credit", "boss"),
        ("referral_void", "boss"),
    ]
    assert log[3][3].endswith("+100, score 100 (released)")
    assert log[4][3].endswith("+50, score 150 (released)")


def test_an_admin_voids_a_credited_boost_and_the_referrer_moves_at_once(
    rooms, waitlists, reports, r, keys
):
    """Voiding a credited leg takes back exactly the points it gave (so the cap's cut
    is not taken twice) and the referrer's place follows in the same script; a void
    leg cannot be voided again."""
    make_waitlist(rooms, ordering="priority", referral_cap=150)
    a, b = sign_up(waitlists, 2)
    code = waitlists.position(ROOM, b).referral_code
    x, y = (
        waitlists.join(ROOM, n, f"{n}@example.org", referral_code=code, address=f"10.9.{i}.1")
        for i, n in enumerate(("x", "y"))
    )
    waitlists.confirm(ROOM, x.id)
    waitlists.confirm(ROOM, y.id)  # +50: the cap's cut
    assert waitlists.position(ROOM, b).score == 150
    assert line(r, keys)[:2] == [b, a]
    waitlists.void(ROOM, x.id, who="boss")
    standing = waitlists.position(ROOM, b)
    assert (standing.score, tuple(standing.referrals)) == (50, (1, 0, 0))
    assert line(r, keys)[:2] == [b, a]  # 50 points still put b first
    waitlists.void(ROOM, y.id, who="boss")
    assert waitlists.position(ROOM, b).score == 0
    assert line(r, keys)[:2] == [a, b]  # back in join order
    with pytest.raises(NotHeld):
        waitlists.void(ROOM, y.id, who="boss")
    log = kinds_of(reports, "referral_void")
    assert [(who, detail.split(": ")[1]) for _, who, _, detail in log] == [
        ("boss", "-100, score 50 (admin)"),
        ("boss", "-50, score 0 (admin)"),
    ]


def test_an_admin_finds_an_entry_by_email_or_code_and_sees_its_tree(rooms, waitlists):
    """Search by any alias of the email (as normalised at join) or by the referral
    code; the detail has the referrers up the chain and every leg below, with its
    state and why."""
    make_waitlist(rooms, ordering="priority", referral_velocity=1)
    top = waitlists.join(ROOM, "Top", "Top.Person+news@gmail.com")
    waitlists.confirm(ROOM, top.id)
    mid = waitlists.join(
        ROOM, "Mid", "mid@example.org", referral_code=top.referral_code, address="10.1.1.1"
    )
    waitlists.confirm(ROOM, mid.id)
    legs = [
        waitlists.join(
            ROOM,
            f"L{i}",
            f"l{i}@example.org",
            referral_code=mid.referral_code,
            address=f"10.2.{i}.1",
        )
        for i in range(3)
    ]
    waitlists.confirm(ROOM, legs[0].id)  # credited
    waitlists.confirm(ROOM, legs[1].id)  # held: past the velocity of 1 an hour
    assert waitlists.find(ROOM, "topperson@googlemail.com") == top.id
    assert waitlists.find(ROOM, mid.referral_code.lower()) == mid.id
    assert waitlists.find(ROOM, "nobody@example.org") is None
    assert waitlists.find(ROOM, "not an email@") is None
    seen = waitlists.detail(ROOM, legs[0].id)
    assert [(i, n) for i, n, _ in seen.referrers] == [(mid.id, "Mid"), (top.id, "Top")]
    assert (seen.leg, seen.email) == ("credited", "l0@example.org")
    tree = waitlists.detail(ROOM, top.id)
    assert tree.shown == 4
    (only,) = tree.referees
    assert (only.entry, only.leg, only.points) == (mid.id, "credited", 100)
    assert [(x.entry, x.leg, x.why, x.confirmed) for x in only.referees] == [
        (legs[0].id, "credited", "", True),
        (legs[1].id, "held", "velocity", True),
        (legs[2].id, "pending", "", False),
    ]
    with pytest.raises(EntryNotFound):
        waitlists.detail(ROOM, "no-such-entry")


# -- the priority score's exactness ------------------------------------------------


def test_the_priority_score_bound_holds_for_every_allowed_setting():
    """The cap's and the boost's upper bound is MAX_POINTS, below 2**21, and seq stays
    below 2**32: so every score's size is below 2**53, where doubles are exact."""
    assert BY_NAME["referral_cap"].high == MAX_POINTS == BY_NAME["referral_boost"].high
    assert MAX_POINTS < 2**21 - 1
    extreme = priority_score(MAX_POINTS, 1)
    assert abs(extreme) < 2**53 and abs(priority_score(0, TWO32 - 1)) < 2**53
    assert float(extreme) == extreme and float(extreme - 1) != float(extreme)


@given(
    a=st.tuples(st.integers(0, MAX_POINTS), st.integers(1, TWO32 - 1)),
    b=st.tuples(st.integers(0, MAX_POINTS), st.integers(1, TWO32 - 1)),
)
def test_priority_scores_are_exact_and_ordered(a, b):
    """Any two (points, seq) pairs: each score survives a double, and the scores order
    as (more points first, then join order), ties only for the same entry."""
    sa, sb = priority_score(*a), priority_score(*b)
    assert int(float(sa)) == sa and int(float(sb)) == sb
    key_a, key_b = (-a[0], a[1]), (-b[0], b[1])
    assert (sa < sb) == (key_a < key_b) and (sa == sb) == (key_a == key_b)


def test_priority_order_is_exact_near_the_cap_with_many_entries(rooms, waitlists, r, keys):
    """Hundreds of entries with sequence numbers just under 2**32 and points at the
    largest cap, one below it, or none: Redis holds each score exactly and the line is
    ordered by (points, join order), no two scores alike."""
    make_waitlist(
        rooms, ordering="priority", referral_cap=MAX_POINTS, referral_boost=MAX_POINTS - 1
    )
    wl = keys.waitlist(ROOM)
    r.set(wl.seq, TWO32 - 1 - 450)  # 450 entries spend the sequence to its end
    ids = sign_up(waitlists, 300)
    points = {}
    for i, referrer in enumerate(ids[:100]):  # 1 or 2 referees: cap - 1 or the cap
        code = waitlists.position(ROOM, referrer).referral_code
        for k in range(1 + i % 2):
            x = waitlists.join(ROOM, "x", f"x{i}-{k}@example.org", referral_code=code)
            waitlists.confirm(ROOM, x.id)
        points[referrer] = MAX_POINTS if i % 2 else MAX_POINTS - 1
    scores = dict(r.zrange(wl.line, 0, -1, withscores=True))
    records = {e: json.loads(raw) for e, raw in r.hgetall(wl.entries).items()}
    assert len(set(scores.values())) == len(scores) == 450
    for entry, score in scores.items():
        record = records[entry]
        assert record["p"] == points.get(entry, 0)
        assert score == priority_score(record["p"], record["seq"])  # exact, not close
        assert TWO32 - 1 - 450 < record["seq"] <= TWO32 - 1
    model = sorted(scores, key=lambda e: (-records[e]["p"], records[e]["seq"]))
    assert line(r, keys) == model
    assert line(r, keys)[:2] == [ids[1], ids[3]]
    with pytest.raises(JoinRefused):  # the sequence is spent: the waitlist is full
        waitlists.join(ROOM, "late", "late@example.org")


# -- the lottery -------------------------------------------------------------------


def test_a_lottery_draw_anyone_can_verify(rooms, waitlists, reports, r, keys, clock):
    """The seed's SHA-256 is published when the lottery is set; nobody has a position or
    is admitted before the draw; the draw reveals the seed, and the order recomputed
    from it and the participants is the line's; later joiners go to the back."""
    make_waitlist(rooms, ordering="lottery")
    before = waitlists.draw_record(ROOM)
    assert before.state == "committed" and len(before.commitment) == 64 and before.seed == ""
    ids = sign_up(waitlists, 40)
    assert {waitlists.position(ROOM, e).position for e in ids} == {0}
    with pytest.raises(DrawPending):
        rooms.admit(ROOM, 5)
    clock.advance(10)
    record = waitlists.draw(ROOM, who="boss")
    assert record.state == "drawn" and record.entries == 40
    assert record.commitment == before.commitment == commitment_of(record.seed)
    published = waitlists.draw_entries(ROOM)
    assert sorted(published) == sorted(ids)
    order = verify_draw(record.seed, published)
    assert line(r, keys) == order
    assert [waitlists.position(ROOM, e).position for e in order] == list(range(1, 41))
    assert order != ids  # 40! orders: the draw did shuffle
    late = sign_up(waitlists, 3, start=100)
    assert line(r, keys) == order + late
    assert waitlists.draw(ROOM) == record  # idempotent
    assert rooms.admit(ROOM, 3).tokens == tuple(order[:3])
    kinds = [(e.kind, e.who) for e in reports.audit(ROOM, kinds=["draw_commit", "draw"])][::-1]
    assert kinds == [("draw_commit", "api"), ("draw", "boss"), ("draw", "boss")]
    assert reports.audit(ROOM, kinds=["draw"])[0].detail == f"40 entries drawn; seed {record.seed}"


def test_the_draw_ranks_unconfirmed_entries_and_admits_only_the_confirmed(
    rooms, waitlists, r, keys
):
    """Everyone waiting takes part; admission then skips the unconfirmed."""
    make_waitlist(rooms, ordering="lottery")
    ids = sign_up(waitlists, 12, confirm=False)
    confirmed = set(ids[::2])
    for e in confirmed:
        waitlists.confirm(ROOM, e)
    order = verify_draw(waitlists.draw(ROOM).seed, ids)
    assert line(r, keys) == order
    assert rooms.admit(ROOM, 12).tokens == tuple(e for e in order if e in confirmed)


def test_verify_draw_is_the_published_rule():
    """By the first 52 bits of HMAC-SHA256(seed, id), ties by id: a worked example."""
    seed = "00" * 32
    ids = ["b", "a", "c"]
    ranks = {i: draw_rank(bytes(32), i) for i in ids}
    assert verify_draw(seed, ids) == sorted(ids, key=lambda i: ranks[i])
    import hmac

    digest = hmac.new(bytes(32), b"a", hashlib.sha256).digest()
    assert ranks["a"] == int.from_bytes(digest, "big") >> (256 - 52)
    assert commitment_of(seed) == hashlib.sha256(bytes(32)).hexdigest()


def test_the_sweep_holds_the_draw_at_draw_at(rooms, waitlists, clock):
    """draw_at: the sweep draws once the time has come, and the schedule then admits."""
    make_waitlist(
        rooms, ordering="lottery", draw_at=int(clock.now) + 60, admit_every_minutes=1,
        admit_batch=2,
    )  # fmt: skip
    ids = sign_up(waitlists, 5)
    assert waitlists.sweep(ROOM) == 0
    assert waitlists.draw_record(ROOM).state == "committed"
    clock.advance(60)
    waitlists.sweep(ROOM)
    record = waitlists.draw_record(ROOM)
    assert record.state == "drawn"
    clock.advance(60)
    assert waitlists.sweep(ROOM) == 2
    assert [m.entry for m in admissions(waitlists)] == verify_draw(record.seed, ids)[:2]


def test_a_draw_left_half_done_is_finished_by_the_sweep(rooms, waitlists, r, keys):
    """A process that died while ranking: the next sweep finishes the same draw."""
    make_waitlist(rooms, ordering="lottery")
    ids = sign_up(waitlists, 10)
    started = waitlists.scripts["waitlist_draw"](
        keys={**keys.room(ROOM).named(), **keys.waitlist(ROOM).named()},
        args=["", "", 200, "boss"],
    )
    assert started[1] == "ranking"
    seed = bytes.fromhex(started[2])
    first = ids[:4]
    pairs = [x for e in first for x in (e, DRAWN + draw_rank(seed, e))]
    waitlists.scripts["waitlist_rank"](
        keys={**keys.room(ROOM).named(), **keys.waitlist(ROOM).named()},
        args=["", "", 200, "boss", *pairs],
    )
    assert waitlists.draw_record(ROOM).state == "ranking"
    late = waitlists.join(ROOM, "Late", "late@example.org")
    assert late.position == 11  # behind every participant, even mid-draw
    waitlists.sweep(ROOM)
    record = waitlists.draw_record(ROOM)
    assert record.state == "drawn" and record.entries == 10
    assert line(r, keys) == [*verify_draw(record.seed, ids), late.id]


def test_only_a_lottery_draws(rooms, waitlists):
    """A fifo or priority waitlist has no draw."""
    make_waitlist(rooms)
    with pytest.raises(NotALottery):
        waitlists.draw(ROOM)


# -- settings that would strand people ---------------------------------------------


def test_kind_and_ordering_change_only_when_nobody_would_be_stranded(rooms, waitlists, reports):
    """Kind changes only in an empty room; a waitlist's ordering only while nobody
    waits, except to lottery (a fresh commitment) before a draw; nothing is written."""
    rooms.configure("live", {"capacity": 1})
    rooms.join("live")
    with pytest.raises(SettingsConflict):
        rooms.configure("live", {"kind": "waitlist"})
    make_waitlist(rooms, ordering="priority")
    sign_up(waitlists, 2)
    with pytest.raises(SettingsConflict):
        rooms.configure(ROOM, {"kind": "live"})
    with pytest.raises(SettingsConflict):
        rooms.configure(ROOM, {"ordering": "fifo", "capacity": 5})
    assert rooms.find_settings(ROOM).ordering == "priority"
    assert rooms.find_settings(ROOM).capacity == 10
    rooms.configure(ROOM, {"ordering": "lottery"})
    first = waitlists.draw_record(ROOM).commitment
    rooms.configure(ROOM, {"draw_at": 1_800_000_000})  # still lottery: same commitment
    assert waitlists.draw_record(ROOM).commitment == first
    with pytest.raises(SettingsConflict):
        rooms.configure(ROOM, {"ordering": "fifo"})
    rooms.configure("empty", {"kind": "waitlist"})
    rooms.configure("empty", {"ordering": "priority"})
    rooms.configure("empty", {"kind": "live"})
    commits = reports.audit(ROOM, kinds=["draw_commit"])
    assert [c.detail for c in commits] == [first]


def test_deleting_a_waitlist_room_removes_its_entries(rooms, waitlists, r):
    """One DEL takes the waitlist's keys with the room's."""
    make_waitlist(rooms, ordering="lottery")
    sign_up(waitlists, 3)
    waitlists.draw(ROOM)
    rooms.admit(ROOM, 1)
    assert rooms.delete(ROOM)
    assert [k for k in r.keys("*") if ":mailto:" not in k] == []  # budgets: per mailbox


# -- the order against a model ------------------------------------------------------

HOUR = 3600
# Pairs of addresses share a /24; "" is an unknown address.
ADDRESSES = ["", *(f"10.0.{net}.{host}" for net in range(6) for host in (1, 2))]


@dataclass
class ModelEntry:
    seq: int
    email: str
    net: str
    address: str
    ac: int
    points: int = 0
    confirmed: bool = False
    by: str | None = None
    leg: str = ""  # pending | credited | held | void
    state: str = "waiting"
    credits: list[float] = field(default_factory=list)


@dataclass
class Model:
    """The waitlist rules of issue 13, as plainly as possible."""

    ordering: str
    boost: int
    cap: int
    velocity: int
    per_address: int
    entries: dict[str, ModelEntry] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)
    codes: dict[str, str] = field(default_factory=dict)
    addresses: Counter = field(default_factory=Counter)
    seq: int = 0
    drawn: list[str] | None = None  # the draw's order, once held
    seed: str = ""

    def join(self, entry: str, code: str, email: str, address: str, referral: str) -> str:
        """Returns the entry the person holds afterwards."""
        if email in self.emails:  # a referral code never attaches to an existing entry
            return self.emails[email]
        self.seq += 1
        net = str(ipaddress.ip_network(f"{address}/24", strict=False)) if address else ""
        ac = 0
        if address:
            self.addresses[address] += 1
            ac = self.addresses[address]
        self.entries[entry] = ModelEntry(self.seq, email, net, address, ac)
        self.emails[email] = entry
        self.codes[code] = entry
        self.refer(entry, self.entries[entry], referral)
        return entry

    def refer(self, entry: str, e: ModelEntry, referral: str) -> None:
        referrer = self.codes.get(referral)
        if referrer is not None and referrer != entry:
            e.by, e.leg = referrer, "pending"

    def loops(self, x: str, r: str) -> bool:
        at: str | None = r
        for _ in range(64):
            if at == x:
                return True
            if at is None:
                return False
            at = self.entries[at].by
        return False

    def confirm(self, entry: str, now: float) -> None:
        x = self.entries[entry]
        if x.confirmed:
            return
        x.confirmed = True
        if x.leg != "pending" or x.by is None:
            return
        r = self.entries[x.by]
        recent = [t for t in r.credits if t > now - HOUR]
        suspect = bool(x.net and x.net == r.net) or x.ac > self.per_address
        if self.loops(entry, x.by):
            x.leg = "void"
        elif suspect or len(recent) >= self.velocity:
            x.leg = "held"
        else:
            x.leg = "credited"
            r.points = min(r.points + self.boost, max(self.cap, r.points))
            r.credits = [*recent, now]

    def order(self) -> list[str]:
        waiting = [e for e, x in self.entries.items() if x.state == "waiting"]
        if self.ordering == "priority":
            return sorted(waiting, key=lambda e: (-self.entries[e].points, self.entries[e].seq))
        if self.ordering == "lottery" and self.drawn is not None:
            drawn = [e for e in self.drawn if self.entries[e].state == "waiting"]
            late = sorted(set(waiting) - set(drawn), key=lambda e: self.entries[e].seq)
            return drawn + late
        return sorted(waiting, key=lambda e: self.entries[e].seq)

    def admit(self, count: int) -> list[str]:
        chosen = [e for e in self.order() if self.entries[e].confirmed][:count]
        for e in chosen:
            self.entries[e].state = "admitted"
        return chosen


# Steps name people by their index among those who joined (modulo their number), so
# that every step meets someone: joins add a person, rejoins come back with a code.
PICK = st.integers(0, 50)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from(ADDRESSES), st.none() | PICK),
        *[st.tuples(st.just("join"), st.sampled_from(ADDRESSES), PICK)] * 2,
        st.tuples(st.just("rejoin"), PICK, PICK),
        *[st.tuples(st.just("confirm"), PICK)] * 3,
        st.tuples(st.just("wait"), st.sampled_from([60, 600, 3600])),
        st.tuples(st.just("admit"), st.integers(1, 3)),
        st.tuples(st.just("draw")),
    ),
    min_size=15,
    max_size=50,
)


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ordering=st.sampled_from(["fifo", "priority", "lottery"]),
    boost=st.sampled_from([1, 100]),
    cap=st.sampled_from([150, 500, 0]),
    velocity=st.integers(1, 3),
    per_address=st.integers(1, 3),
    ops=OPS,
)
def test_the_order_matches_a_plain_python_model(
    r, keys, ordering, boost, cap, velocity, per_address, ops
):
    """Any sequence of joins (with referral codes, shared addresses, rejoins), email
    confirmations, time passing, batch admissions and (lottery) the draw: the engine's
    line, points, holds and admissions are the model's."""
    r.flushall()
    now = [1_700_000_000.0]
    rooms = engine(r, keys, lambda: now[0])
    waitlists = Waitlists(rooms)
    rooms.configure(
        ROOM,
        {"kind": "waitlist", "ordering": ordering, "referral_boost": boost,
         "referral_cap": cap, "referral_velocity": velocity, "entries_per_address": per_address},
    )  # fmt: skip
    model = Model(ordering, boost, cap, velocity, per_address)
    people: list[str] = []  # entry ids, in join order
    codes: list[str] = []

    def join(who: int, address: str, referral: str) -> None:
        entry = waitlists.join(
            ROOM, f"P{who}", f"P.{who}@example.org", referral_code=referral, address=address
        )
        held = model.join(entry.id, entry.referral_code, f"p.{who}@example.org", address, referral)
        assert entry.id == held
        if who == len(people):
            people.append(entry.id)
            codes.append(entry.referral_code)

    for op in ops:
        n = len(people)
        if op[0] == "join":
            _, address, referrer = op
            join(n, address, codes[referrer % n] if referrer is not None and n else "")
        elif op[0] == "rejoin" and n:
            join(op[1] % n, "", codes[op[2] % n])
        elif op[0] == "confirm" and n:
            waitlists.confirm(ROOM, people[op[1] % n])
            model.confirm(people[op[1] % n], now[0])
        elif op[0] == "wait":
            now[0] += op[1]
        elif op[0] == "admit":
            if ordering == "lottery" and model.drawn is None:
                with pytest.raises(DrawPending):
                    rooms.admit(ROOM, op[1])
            else:
                assert list(rooms.admit(ROOM, op[1]).tokens) == model.admit(op[1])
        elif op[0] == "draw" and ordering == "lottery" and model.drawn is None and n >= 4:
            record = waitlists.draw(ROOM)
            participants = model.order()
            model.drawn = verify_draw(record.seed, participants)
            assert sorted(waitlists.draw_entries(ROOM)) == sorted(participants)
        if ordering != "lottery" or model.drawn is not None:
            assert line(r, keys) == model.order()
        else:
            assert sorted(line(r, keys)) == sorted(model.order())
    for entry, x in model.entries.items():
        standing = waitlists.position(ROOM, entry)
        assert (standing.score, standing.confirmed, standing.state) == (
            x.points,
            x.confirmed,
            x.state,
        )
        referees = [y for y in model.entries.values() if y.by == entry]
        assert tuple(standing.referrals) == (
            sum(y.leg == "credited" for y in referees),
            sum(y.leg == "held" for y in referees),
            sum(y.leg == "pending" for y in referees),
        )
