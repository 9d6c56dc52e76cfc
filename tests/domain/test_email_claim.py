"""An offer to a visitor who gave an email lasts ``email_claim_seconds`` (issue 35): long
enough to come back from the email after closing every page; an open page takes its
offer at once either way, and an offer to someone without an email still lasts the
check-in window."""

from __future__ import annotations

import pytest
from building import mailer_of

from webapp.domain.rooms import TicketGone

ROOM = "live"


def offered(rooms, email: str = ""):
    """A room of one seat whose seat is offered to a waiter (with ``email``, if any)."""
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 30, "email_claim_seconds": 180})
    first = rooms.join(ROOM, name="First")
    waiter = rooms.join(ROOM, name="Ada", email=email, lang="en" if email else "")
    behind = rooms.join(ROOM, name="Bea")
    rooms.leave(ROOM, first.token)
    return waiter, behind


def test_an_emailed_offer_waits_for_its_claim(rooms, clock):
    """Ada gave an email and closed her pages: her offer outlasts the check-in window,
    and her claim 2 minutes later takes the seat."""
    waiter, behind = offered(rooms, "ada@example.org")
    for _ in range(12):  # two minutes; Bea's page keeps checking in
        clock.advance(10)
        assert rooms.check_in(ROOM, behind.token).state == "waiting"
    assert rooms.check_in(ROOM, waiter.token).state == "admitted"


def test_an_emailed_offer_lapses_after_its_window(rooms, clock):
    """Unclaimed after email_claim_seconds, the seat goes to the next in line."""
    waiter, behind = offered(rooms, "ada@example.org")
    for _ in range(19):
        clock.advance(10)
        rooms.check_in(ROOM, behind.token)
    assert rooms.check_in(ROOM, behind.token).state == "admitted"
    with pytest.raises(TicketGone) as gone:
        rooms.check_in(ROOM, waiter.token)
    assert gone.value.why == "unclaimed"


def test_an_offer_without_an_email_keeps_the_check_in_window(rooms, clock):
    """No email: the offer lasts dropout_seconds, as before."""
    waiter, behind = offered(rooms)
    for _ in range(4):
        clock.advance(10)
        rooms.check_in(ROOM, behind.token)
    assert rooms.check_in(ROOM, behind.token).state == "admitted"
    with pytest.raises(TicketGone):
        rooms.check_in(ROOM, waiter.token)


def test_the_email_gives_the_whole_window(rooms, clock, smtp):
    """The email says "within 3 minutes", and its link lasts as long as the offer."""
    handler, port = smtp
    offered(rooms, "ada@example.org")
    mailer = mailer_of(rooms, port, secret="s")
    while mailer.run_once():
        pass
    [message] = handler.messages
    text = message.get_payload()[0].get_payload(decode=True).decode()
    assert "3 minutes" in text, text
