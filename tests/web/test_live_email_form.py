"""The waiting page's "email me when it is my turn" (issue 13, live rooms): the address
is checked, kept on the place, shown, and removable; a seat offered to the place then
writes its email to the outbox; a bad address changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.web.conftest import mailer_says
from webapp.domain.rooms import WaitingRooms
from webapp.redis.keys import Keys


@pytest.fixture(autouse=True)
def mail_can_be_sent(app: Flask) -> None:
    mailer_says(app, ok=True)


def waiting_bob(make_visitor: Any, make_room: Any) -> tuple[Any, Any]:
    make_room("hall", capacity=1)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    ann.join("hall")
    assert "Also email me when it is my turn" in bob.join("hall").get_data(as_text=True)
    return ann, bob


def token_of(visitor: Any) -> str:
    with visitor.client.session_transaction() as session:
        return str(session["tickets"]["hall"])


def test_an_email_is_kept_shown_and_sent_when_the_seat_comes(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, r: Any, reports
) -> None:
    """Bob gives an email: the page says it will be used; when Ann leaves, the offer of
    her seat to Bob is in the outbox with his address."""
    ann, bob = waiting_bob(make_visitor, make_room)
    sent = bob.client.post(
        "/rooms/hall/email", data={"csrf_token": bob.csrf(), "email": "Bob.B@Example.org"}
    )
    assert sent.status_code == 303
    page = bob.get(sent.location).get_data(as_text=True)
    assert "We will email Bob.B@example.org when it is your turn." in page
    assert "we also email Bob.B@example.org" in page and "Stop the email" in page
    assert reports.email_of("hall", token_of(bob)) == "Bob.B@example.org"
    ann.client.post("/rooms/hall/leave", data={"csrf_token": ann.csrf()})
    notices = [f for _, f in r.xrange(Keys().room("hall").outbox)]
    assert [(n["kind"], n["email"], n["entry"]) for n in notices] == [
        ("offered", "Bob.B@example.org", token_of(bob))
    ]


def test_a_bad_email_changes_nothing_and_an_email_can_be_removed(
    make_visitor: Any, make_room: Any, engine: WaitingRooms, reports
) -> None:
    """A malformed or disposable address is refused in words; Stop the email removes it;
    without the form's CSRF token nothing is stored."""
    _, bob = waiting_bob(make_visitor, make_room)
    for bad in ("not an email", "someone@mailinator.com"):
        said = bob.client.post("/rooms/hall/email", data={"csrf_token": bob.csrf(), "email": bad})
        assert said.status_code == 303
        text = bob.get(said.location).get_data(as_text=True)
        assert "email address" in text and "we also email" not in text
    assert reports.email_of("hall", token_of(bob)) == ""
    forged = bob.client.post("/rooms/hall/email", data={"email": "bob@example.org"})
    assert forged.status_code == 400
    assert reports.email_of("hall", token_of(bob)) == ""
    bob.client.post(
        "/rooms/hall/email", data={"csrf_token": bob.csrf(), "email": "bob@example.org"}
    )
    gone = bob.client.post("/rooms/hall/email", data={"csrf_token": bob.csrf(), "remove": "1"})
    assert "No email will be sent." in bob.get(gone.location).get_data(as_text=True)
    assert reports.email_of("hall", token_of(bob)) == ""


@pytest.mark.parametrize("smtp", ["down", "no mailer"])
def test_no_email_is_offered_when_none_can_be_sent(
    app: Flask, make_visitor: Any, make_room: Any, smtp: str
) -> None:
    """With the mailer's SMTP server not answering, or no mailer checking, the waiting
    page offers no email: it would never come."""
    app.extensions["services"].mail.client.delete(app.extensions["services"].keys.mail_health)
    if smtp == "down":
        mailer_says(app, ok=False, error="Connection refused")
    make_room("hall", capacity=1)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    ann.join("hall")
    page = bob.join("hall").get_data(as_text=True)
    assert "Keep this page" in page  # the waiting page
    assert "email me" not in page.lower() and 'name="email"' not in page
    form = bob.get("/rooms/hall/email").get_data(as_text=True)  # the no-script form's page
    assert "cannot send email right now" in form and 'name="email"' not in form
