"""The mailer sends a live room's ``offered`` notice (issue 13) once, in the ticket's
language, with a claim link valid until the offer's deadline."""

from __future__ import annotations

from email.header import decode_header, make_header

import pytest
from building import mailer_of

from webapp.domain.claims import ClaimRefused, verify_claim
from webapp.web.i18n import compile_catalogues, translations_dir
from webapp.workers.mailer import OFFER_EMAIL_AFTER

ROOM = "lobby"
SECRET = "live mail secret"


def test_an_offered_seat_is_mailed_once_with_a_link_until_its_deadline(rooms, clock, smtp):
    """The offer's notice goes once, in German, with a claim link that expires with it."""
    handler, port = smtp
    compile_catalogues(translations_dir())  # as the worker does when it starts
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 60, "session_seconds": 300})
    first = rooms.join(ROOM, name="First")
    waiter = rooms.join(ROOM, name="Ada", email="ada@example.org", lang="de")
    rooms.leave(ROOM, first.token)  # the seat is offered to Ada, whose pages are closed
    mailer = mailer_of(rooms, port, secret=SECRET, clock=clock)
    assert mailer.run_once() == 0 and handler.messages == []  # an open page may take it
    clock.advance(OFFER_EMAIL_AFTER)
    while mailer.run_once():
        pass
    assert mailer.run_once() == 0
    [message] = handler.messages
    assert message["To"] == "ada@example.org"
    subject = str(make_header(decode_header(message["Subject"])))
    assert subject == "Ein Platz ist frei für Sie: lobby"
    text, html = (p.get_payload(decode=True).decode() for p in message.get_payload())
    assert "Meinen Platz nehmen" in html
    link = next(w for w in text.split() if w.startswith("https://w.example/claim/"))
    claim = verify_claim(SECRET, link.rsplit("/", 1)[1], clock())
    assert (claim.room, claim.entry, claim.kind) == (ROOM, waiter.token, "offered")
    # the offer to someone who gave an email lasts email_claim_seconds (180 s by default)
    assert claim.expires == pytest.approx(clock() - OFFER_EMAIL_AFTER + 180, abs=1)
    with pytest.raises(ClaimRefused):
        verify_claim(SECRET, link.rsplit("/", 1)[1], clock() + 181)


def test_the_offer_email_names_the_room_by_its_title(rooms, clock, smtp):
    """A room titled "Sneaker drop" is named so in the subject and the body, never by
    its address."""
    handler, port = smtp
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 60, "title": "Sneaker drop"})
    first = rooms.join(ROOM, name="First")
    rooms.join(ROOM, name="Ada", email="ada@example.org", lang="en")
    rooms.leave(ROOM, first.token)
    clock.advance(OFFER_EMAIL_AFTER)
    mailer = mailer_of(rooms, port, secret=SECRET, clock=clock)
    while mailer.run_once():
        pass
    [message] = handler.messages
    assert str(make_header(decode_header(message["Subject"]))) == (
        "A seat is free for you: Sneaker drop"
    )
    text, html = (p.get_payload(decode=True).decode() for p in message.get_payload())
    assert "A seat in Sneaker drop is free for you now." in text
    assert "<strong>Sneaker drop</strong>" in html


def test_a_seat_taken_before_the_email_is_due_is_not_mailed(rooms, clock, smtp):
    """The visitor's check-in (an open page, a client) took the offered seat within
    OFFER_EMAIL_AFTER: no email (its link would offer a seat that is theirs already);
    the notice is recorded skipped, never sent, and stays so."""
    handler, port = smtp
    rooms.configure(ROOM, {"capacity": 1, "dropout_seconds": 60})
    first = rooms.join(ROOM, name="First")
    waiter = rooms.join(ROOM, name="Ada", email="ada@example.org", lang="en")
    rooms.leave(ROOM, first.token)
    clock.advance(2)
    assert rooms.check_in(ROOM, waiter.token).state == "admitted"  # taken
    clock.advance(OFFER_EMAIL_AFTER)
    mailer = mailer_of(rooms, port, secret=SECRET, clock=clock)
    while mailer.run_once():
        pass
    assert mailer.run_once() == 0
    assert handler.messages == []
    deliveries = rooms.client.hgetall(rooms.keys.deliveries(ROOM))
    assert deliveries.get("#skipped") == "1" and "#sent" not in deliveries
