"""Scheduled drops (issue 24): the schedule's states with the clock controlled, the
draw (recomputed from the revealed seed), the start, the end, and the stock."""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

import pytest

from webapp.domain.draw import commitment_of, verify_draw
from webapp.domain.drops import outlook
from webapp.domain.refusals import EventEnded, NotOpenYet, SoldOut, TicketGone
from webapp.domain.tickets import public_id
from webapp.domain.visits import Visits

T0 = 1_700_000_000  # the FakeClock's start


def schedule(visits: Visits, room: str = "drop", **more: Any) -> None:
    visits.configure(
        room,
        {"capacity": 2, "prequeue_at": T0 + 60, "starts_at": T0 + 120, **more},
    )


def wait(visits: Visits, clock: Any, tokens: list[str], seconds: int, room: str = "drop") -> None:
    """Lets time pass while every ticket's page checks in every 10 seconds."""
    for _ in range(seconds // 10):
        clock.advance(10)
        for token in tokens:
            with contextlib.suppress(TicketGone):
                visits.check_in(room, token)
    clock.advance(seconds % 10)


def test_before_the_prequeue_a_join_is_refused(visits: Visits) -> None:
    """Before prequeue_at nobody joins: not_open_yet."""
    schedule(visits)
    with pytest.raises(NotOpenYet):
        visits.join("drop", identity="a")


def test_the_seed_is_committed_when_the_start_is_scheduled(visits: Visits) -> None:
    """The commitment is published at once; the seed stays in Redis until the start."""
    schedule(visits)
    record = visits.drops.draw("drop")
    assert record.state == "committed"
    assert len(record.commitment) == 64 and record.seed == ""
    assert record.starts_at == T0 + 120


def test_prequeue_places_nobody_and_lets_nobody_in(visits: Visits, clock: Any) -> None:
    """In the pre-queue tickets wait with no position; nobody is seated."""
    schedule(visits)
    clock.advance(61)
    tickets = [visits.join("drop", identity=f"v{i}").ticket for i in range(5)]
    assert all(t.state == "waiting" and t.position == 0 for t in tickets)
    assert visits.drops.prequeued("drop") == 5
    visits.sweep("drop")
    again = visits.check_in("drop", tickets[0].token).ticket
    assert again.active == 0 and again.position == 0


def test_presence_holds_in_the_prequeue(visits: Visits, clock: Any) -> None:
    """A pre-queued ticket that stops checking in drops out, as in the line."""
    schedule(visits, dropout_seconds=30)
    clock.advance(61)
    gone = visits.join("drop", identity="gone").ticket
    kept = visits.join("drop", identity="kept").ticket
    for _ in range(4):
        clock.advance(10)
        visits.check_in("drop", kept.token)
    visits.sweep("drop")
    with pytest.raises(TicketGone):
        visits.check_in("drop", gone.token)
    assert visits.drops.prequeued("drop") == 1


def test_the_start_ranks_the_prequeue_by_the_draw(visits: Visits, clock: Any) -> None:
    """At starts_at the sweep draws: the line's order is verify_draw's over the revealed
    seed and the draw ids; the commitment is the seed's SHA-256; later arrivals go
    behind; seats fill as they allow."""
    schedule(visits)
    commitment = visits.drops.draw("drop").commitment
    clock.advance(61)
    tokens = [visits.join("drop", identity=f"v{i}").ticket.token for i in range(30)]
    wait(visits, clock, tokens, 60)
    visits.sweep("drop")
    record = visits.drops.draw("drop")
    assert record.state == "drawn" and record.entries == 30
    assert commitment_of(record.seed) == commitment
    ids = {public_id(t): t for t in tokens}
    expected = verify_draw(record.seed, ids)
    assert visits.drops.drawn_ids("drop") == expected
    seated = [p.token for p in visits.reports.participants("drop")]
    assert sorted(seated) == sorted(ids[i] for i in expected[:2])
    positions = {t: visits.check_in("drop", t).ticket.position for t in tokens if t not in seated}
    assert [public_id(t) for t in sorted(positions, key=positions.get)] == expected[2:]
    late = visits.join("drop", identity="late").ticket
    assert late.position == 29


def test_a_second_start_does_nothing(visits: Visits, clock: Any) -> None:
    """ "Start now" twice: the second draws nobody and changes nothing."""
    schedule(visits)
    clock.advance(61)
    for i in range(5):
        visits.join("drop", identity=f"v{i}")
    assert visits.start_drop("drop", who="admin") == 5
    seed = visits.drops.draw("drop").seed
    assert visits.start_drop("drop", who="admin") == -1
    assert visits.drops.draw("drop").seed == seed
    assert len(visits.drops.drawn_ids("drop")) == 5


def test_a_join_after_starts_at_holds_the_owed_start_first(visits: Visits, clock: Any) -> None:
    """A joiner arriving after starts_at, before the sweep: the draw goes first, and
    the joiner joins behind the pre-queue."""
    schedule(visits)
    clock.advance(61)
    tokens = [visits.join("drop", identity=f"v{i}").ticket.token for i in range(4)]
    wait(visits, clock, tokens, 60)
    late = visits.join("drop", identity="late").ticket
    assert visits.drops.draw("drop").state == "drawn"
    assert late.position == 3  # 2 seated, 2 ahead


def test_ends_at_closes_joins_and_may_clear_the_line(visits: Visits, clock: Any) -> None:
    """After ends_at joins are refused; with ends_at_clears_line the waiting end with
    event_ended."""
    schedule(visits, ends_at=T0 + 300, ends_at_clears_line=True)
    clock.advance(61)
    tokens = [visits.join("drop", identity=f"v{i}").ticket.token for i in range(5)]
    wait(visits, clock, tokens, 60)
    visits.sweep("drop")
    wait(visits, clock, tokens, 200)
    with pytest.raises(EventEnded):
        visits.join("drop", identity="late")
    visits.sweep("drop")
    ended = 0
    for t in tokens:
        try:
            visits.check_in("drop", t)
        except TicketGone as gone:
            assert gone.why == "event_ended"
            ended += 1
    assert ended == 3  # the two seated keep their seats


def test_stock_sold_out_ends_the_waiting_and_refuses_joins(visits: Visits, clock: Any) -> None:
    """At 0 left every waiting ticket ends with sold_out and joins get SoldOut; seated
    people keep their seats; raising the stock reopens."""
    visits.configure("shop", {"capacity": 1, "stock": 5})
    tokens = [visits.join("shop", identity=f"v{i}").ticket.token for i in range(4)]
    report = visits.record_sold("shop", 3, request_id="r1")
    assert report.left == 2 and not report.replay
    assert visits.record_sold("shop", 3, request_id="r1").replay
    report = visits.record_sold("shop", 4, request_id="r2")
    assert report.left == 0 and report.ended == 3
    with pytest.raises(SoldOut):
        visits.join("shop", identity="late")
    assert visits.check_in("shop", tokens[0]).ticket.seated
    with pytest.raises(TicketGone) as gone:
        visits.check_in("shop", tokens[1])
    assert gone.value.why == "sold_out"
    visits.set_stock("shop", 10)
    assert visits.join("shop", identity="later").ticket.state == "waiting"


def test_outlook_counts_one_each_until_ten_admissions() -> None:
    """Likely to sell out: ahead + 1 beyond what is left (one each before 10 admissions,
    then the measured ratio); the share of the line served."""
    assert outlook(5, 0, 0, ahead=4, waiting=10) == (5, 1.0, False, 0.5)
    assert outlook(5, 0, 0, ahead=5, waiting=10).likely_sold_out
    two_each = outlook(10, 40, 20, ahead=5, waiting=20)
    assert two_each.per_admission == 2.0 and two_each.likely_sold_out
    assert two_each.served_share == 0.25
    assert outlook(None, 0, 0, 3, 3).likely_sold_out is False


def test_draw_id_is_the_public_id() -> None:
    """The draw id is the first 12 hex digits of the ticket's SHA-256 (Lua computes it)."""
    assert public_id("abc") == hashlib.sha256(b"abc").hexdigest()[:12]


def test_a_sell_out_is_mailed_to_whoever_gave_an_email(visits: Visits, rooms: Any) -> None:
    """The waiting ticket with an email is told by the outbox, once, in its language;
    the seated one and one without an email are not."""
    from building import mailer_of
    from recording import smtp_server

    from webapp.web.i18n import compile_catalogues, translations_dir

    compile_catalogues(translations_dir())
    visits.configure("shop", {"capacity": 1, "stock": 1})
    visits.join("shop", identity="seated", email="sam@example.org")
    visits.join("shop", identity="ada", email="ada@example.org", lang="es")
    visits.join("shop", identity="bob")
    visits.record_sold("shop", 1)
    with smtp_server() as (handler, port):
        mailer = mailer_of(rooms, port)
        while mailer.run_once():
            pass
    [message] = handler.messages
    assert message["To"] == "ada@example.org"
    text = message.get_payload()[0].get_payload(decode=True).decode()
    assert "https://w.example/rooms/shop" in text


def test_joins_before_any_commitment_are_ranked_at_the_start(visits: Visits, clock: Any) -> None:
    """Settings written without the drop's turn (no seed yet): the pre-queue joins
    unranked, and the start commits, ranks and places them by the same rule."""
    visits.rooms.configure("raw", {"capacity": 1, "prequeue_at": T0 - 1, "starts_at": T0 + 60})
    assert visits.drops.draw("raw").state == ""
    tokens = [visits.join("raw", identity=f"v{i}").ticket.token for i in range(8)]
    assert visits.start_drop("raw") == 8
    record = visits.drops.draw("raw")
    assert visits.drops.drawn_ids("raw") == verify_draw(record.seed, map(public_id, tokens))


def test_the_times_must_come_in_order(visits: Visits) -> None:
    """A pre-queue after the start or an end before it is refused, and nothing
    changes."""
    from webapp.domain.refusals import InvalidInput

    schedule(visits)
    for bad in ({"prequeue_at": T0 + 200}, {"ends_at": T0 + 120}, {"starts_at": T0 + 30}):
        with pytest.raises(InvalidInput):
            visits.configure("drop", bad)
    settings = visits.rooms.find_settings("drop")
    assert settings is not None and (settings.prequeue_at, settings.starts_at) == (
        T0 + 60,
        T0 + 120,
    )


def test_a_new_start_after_a_drop_makes_a_new_draw(visits: Visits, clock: Any) -> None:
    """Once drawn, a start scheduled again in the future commits a new seed; the old
    draw ids are gone and the new pre-queue is drawn at the new start."""
    schedule(visits)
    clock.advance(61)
    visits.join("drop", identity="first")
    assert visits.start_drop("drop") == 1
    old = visits.drops.draw("drop")
    visits.configure("drop", {"prequeue_at": T0 + 50, "starts_at": T0 + 600})
    new = visits.drops.draw("drop")
    assert new.state == "committed" and new.commitment != old.commitment
    assert visits.drops.drawn_ids("drop") == []
    later = visits.join("drop", identity="second").ticket
    assert later.state == "waiting" and later.position == 0
    assert visits.start_drop("drop") == 1
    assert visits.drops.drawn_ids("drop") == [public_id(later.token)]
