"""The mailer's consumer groups (issue 25, hole 1): a room deleted and made again, or an
outbox that expired, leaves no remembered group behind that stops every later room."""

from __future__ import annotations

import building
import pytest

from webapp.domain.waitlist import KnownAddress, Waitlists

SECRET = "mailer test secret"


def sign_up(rooms, room, n):
    """A waitlist ``room`` with ``n`` sign-ups, each queuing one confirmation."""
    rooms.configure(room, {"kind": "waitlist"})
    waitlists = Waitlists(rooms, secret=b"s")
    for i in range(n):
        waitlists.join(room, f"P{i}", f"{room}{i}@example.org")


def drain(mailer):
    while mailer.run_once():
        pass


def test_a_room_made_again_under_its_name_keeps_the_mailer_going(rooms, smtp):
    """Deleted and made again: its group is made again, and later rooms still get mail."""
    handler, port = smtp
    sign_up(rooms, "alpha", 1)
    sign_up(rooms, "omega", 1)
    mailer = building.mailer_of(rooms, port, secret=SECRET)
    drain(mailer)
    assert handler.count() == 2
    rooms.delete("alpha")
    sign_up(rooms, "alpha", 2)  # the same name again: a new outbox, no group
    sign_up(rooms, "omega", 0)
    Waitlists(rooms, secret=b"s").join("omega", "Late", "late@example.org")
    drain(mailer)
    assert handler.count() == 5
    assert sorted(m["To"] for m in handler.messages[2:]) == [
        "alpha0@example.org",
        "alpha1@example.org",
        "late@example.org",
    ]


def test_an_expired_outbox_does_not_stop_the_rooms_after_it(rooms, smtp):
    """An outbox gone (expired) and written again: the group is made again."""
    handler, port = smtp
    sign_up(rooms, "alpha", 1)
    mailer = building.mailer_of(rooms, port, secret=SECRET)
    drain(mailer)
    outbox = rooms.keys.waitlist("alpha").outbox
    rooms.client.delete(outbox)  # what a TTL does after two idle days
    rooms.client.xadd(outbox, {"entry": "nobody", "kind": "confirm"})  # a new stream
    sign_up(rooms, "omega", 1)
    drain(mailer)
    assert [m["To"] for m in handler.messages[1:]] == ["omega0@example.org"]


def test_the_owner_of_a_known_address_is_mailed_their_link(rooms, smtp):
    """A sign-up from another device with a known address mails the owner the entry's
    page (issue 25, hole 3)."""
    handler, port = smtp
    rooms.configure("list", {"kind": "waitlist"})
    waitlists = Waitlists(rooms, secret=b"s")
    waitlists.join("list", "Ann", "ann@example.org", device="ann-phone")
    with pytest.raises(KnownAddress):
        waitlists.join("list", "Eve", "ann@example.org", device="eve-laptop")
    drain(building.mailer_of(rooms, port, secret=SECRET))
    assert [m["Subject"] for m in handler.messages] == [
        "Confirm your email for list",
        "Your link to the waitlist of list",
    ]
    text = handler.messages[1].get_payload()[0].get_payload(decode=True).decode()
    assert "https://w.example/rooms/list/entry/" in text and "Hello Ann," in text
