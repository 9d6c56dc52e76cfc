"""Knowing someone's email is not enough (issue 25, hole 3): a sign-up with an address
signed up already shows its entry only to the browser that made it; anyone else is told
that the owner was mailed their link, and the mailbox gets at most 3 emails an hour."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.web.conftest import Visitor

ROOM = "list"
ENTRY = re.compile(r"/rooms/list/entry/([^/\"?]+)$")


@pytest.fixture
def waitlist(make_room: Any) -> str:
    make_room(ROOM, kind="waitlist", ordering="priority")
    return ROOM


def sign_up(visitor: Visitor, email: str, ref: str = "") -> Any:
    form = {"name": "Ann", "email": email, "ref": ref, "csrf_token": visitor.csrf("/")}
    return visitor.client.post(f"/rooms/{ROOM}/signup", data=form)


def outbox(app: Any) -> list[dict[str, str]]:
    services = app.extensions["services"]
    raw = services.rooms.client.xrange(services.rooms.keys.waitlist(ROOM).outbox)
    return [{_text(k): _text(v) for k, v in fields.items()} for _, fields in raw]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def test_another_browser_gets_no_token_and_the_owner_gets_a_link(
    app: Any, make_visitor: Any, waitlist: str
) -> None:
    """The owner's browser sees its entry again; another sees only a notice."""
    ann = make_visitor("Ann")
    first = sign_up(ann, "ann@example.org")
    assert first.status_code == 303 and ENTRY.search(first.location)
    token = ENTRY.search(first.location).group(1)  # type: ignore[union-attr]
    stranger = sign_up(make_visitor("Eve"), "ann@example.org")
    page = stranger.get_data(as_text=True)
    assert stranger.status_code == 200 and "signed up already" in page
    assert token not in page and "/entry/" not in page
    assert [m["kind"] for m in outbox(app)] == ["confirm", "link"]
    owner = ann  # the browser that made the entry, signing up again
    back = sign_up(owner, "ann@example.org")
    assert back.status_code in (302, 303) and token in back.location


def test_a_referral_code_never_attaches_to_an_existing_entry(
    app: Any, make_visitor: Any, waitlist: str
) -> None:
    """A stranger bringing a referral code with a known address changes nothing."""
    waitlists = app.extensions["services"].waitlists
    sign_up(make_visitor("Ann"), "ann@example.org")
    code = waitlists.join(ROOM, "Bob", "zed@example.org").referral_code
    reply = sign_up(make_visitor("Eve"), "ann@example.org", ref=code)
    assert reply.status_code == 200
    zed = waitlists.join(ROOM, "Zed", "zed@example.org")
    assert zed.referrals.pending == 0


def test_a_mailbox_gets_at_most_three_emails_an_hour(
    app: Any, make_visitor: Any, waitlist: str
) -> None:
    """The 4th sign-up that would mail the same address within the hour is refused with
    a message, and nothing more is queued."""
    sign_up(make_visitor("Ann"), "ann@example.org")
    for _ in range(2):
        assert sign_up(make_visitor("Eve"), "ann@example.org").status_code == 200
    refused = sign_up(make_visitor("Eve"), "ann@example.org")
    assert refused.status_code == 400
    assert "enough emails for now" in refused.get_data(as_text=True)
    assert len(outbox(app)) == 3
