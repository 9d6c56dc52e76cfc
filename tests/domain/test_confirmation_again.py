"""A waitlist entry's confirmation email again (issue 21): resent on request, throttled
and counted on the entry in Redis, or sent to a corrected address before confirming,
after which a link sent to the old address confirms nothing; time controlled."""

from __future__ import annotations

import pytest

from webapp.domain.claims import address_tag
from webapp.domain.waitlist import RESEND_GAP, RESEND_MOST, EmailRefused, EntryNotFound, OldAddress

ROOM = "list"


@pytest.fixture(autouse=True)
def waitlist_room(rooms):
    rooms.configure(ROOM, {"kind": "waitlist"})


def confirmations(waitlists):
    return [(m.entry, m.email, m.nth) for m in waitlists.outbox(ROOM) if m.kind == "confirm"]


def test_a_resend_waits_its_gap_and_stops_at_the_most(waitlists, clock):
    """Asked again at once: too soon, with the seconds left; after the gap: sent (nth 2);
    never more than RESEND_MOST in all, the sign-up's included. (Half an hour apart: a
    mailbox gets at most 3 emails an hour, tested below.)"""
    ann = waitlists.join(ROOM, "Ann", "ann@example.org")
    soon = waitlists.resend_confirmation(ROOM, ann.id)
    assert (soon.outcome, soon.wait) == ("too_soon", RESEND_GAP)
    clock.advance(RESEND_GAP - 1)
    assert waitlists.resend_confirmation(ROOM, ann.id).wait == 1
    outcomes = []
    for _ in range(RESEND_MOST + 2):
        clock.advance(1800)
        outcomes.append(waitlists.resend_confirmation(ROOM, ann.id).outcome)
    assert outcomes == ["sent"] * (RESEND_MOST - 1) + ["too_many"] * 3
    sent = confirmations(waitlists)
    assert [nth for _, _, nth in sent] == list(range(1, RESEND_MOST + 1))
    assert {email for _, email, _ in sent} == {"ann@example.org"}


def test_a_mailbox_gets_at_most_three_emails_an_hour(waitlists, clock):
    """Resends RESEND_GAP apart: the sign-up's and two more go; the 4th in the hour is
    refused (EmailRefused, busy) and sends nothing (issue 25)."""
    clock.advance(3600 - clock() % 3600)  # at the start of an hour
    ann = waitlists.join(ROOM, "Ann", "ann@example.org")
    for _ in range(2):
        clock.advance(RESEND_GAP)
        assert waitlists.resend_confirmation(ROOM, ann.id).outcome == "sent"
    clock.advance(RESEND_GAP)
    with pytest.raises(EmailRefused) as refused:
        waitlists.resend_confirmation(ROOM, ann.id)
    assert refused.value.reason == "busy"
    assert len(confirmations(waitlists)) == 3


def test_a_corrected_address_is_written_to_at_once_and_the_old_link_stops(waitlists):
    """A correction sends at once (no gap) to the new address, which the entry keeps;
    the old address's link confirms nothing, the new one confirms."""
    ann = waitlists.join(ROOM, "Ann", "ann@exmaple.org")
    fixed = waitlists.resend_confirmation(ROOM, ann.id, "ann@example.org")
    assert fixed.sent and waitlists.email_of(ROOM, ann.id) == "ann@example.org"
    assert confirmations(waitlists)[-1] == (ann.id, "ann@example.org", 2)
    with pytest.raises(OldAddress):
        waitlists.confirm(ROOM, ann.id, address_tag(ann.id, "ann@exmaple.org"))
    with pytest.raises(OldAddress):  # a link from before links named their address
        waitlists.confirm(ROOM, ann.id)
    assert not waitlists.position(ROOM, ann.id).confirmed
    confirmed = waitlists.confirm(ROOM, ann.id, address_tag(ann.id, "ann@example.org"))
    assert confirmed.confirmed
    assert waitlists.resend_confirmation(ROOM, ann.id).outcome == "confirmed"
    # the mailbox index follows: the old address may sign up afresh, the new one is Ann's
    again = waitlists.join(ROOM, "Ann", "ann@example.org")
    assert again.id == ann.id
    assert waitlists.join(ROOM, "Someone", "ann@exmaple.org").id != ann.id


def test_a_link_without_a_tag_holds_while_the_address_never_changed(waitlists):
    """Links mailed before they named their address still confirm an entry whose
    address was never corrected."""
    ann = waitlists.join(ROOM, "Ann", "ann@example.org")
    assert waitlists.confirm(ROOM, ann.id).confirmed


def test_a_correction_to_another_entrys_address_is_refused(waitlists):
    """An address already on the waitlist stays its entry's: nothing changes."""
    ann = waitlists.join(ROOM, "Ann", "ann@exmaple.org")
    waitlists.join(ROOM, "Bob", "bob@example.org")
    taken = waitlists.resend_confirmation(ROOM, ann.id, "bob@example.org")
    assert taken.outcome == "taken"
    assert waitlists.email_of(ROOM, ann.id) == "ann@exmaple.org"
    assert len(confirmations(waitlists)) == 2


def test_bad_input_changes_nothing(waitlists):
    """A bad address is refused with why; an unknown entry is not found."""
    ann = waitlists.join(ROOM, "Ann", "ann@exmaple.org")
    with pytest.raises(EmailRefused):
        waitlists.resend_confirmation(ROOM, ann.id, "not an address")
    with pytest.raises(EntryNotFound):
        waitlists.resend_confirmation(ROOM, "nobody", "ann@example.org")
    with pytest.raises(EntryNotFound):  # without an address too (was: "not valid")
        waitlists.resend_confirmation(ROOM, "nobody")
    assert waitlists.email_of(ROOM, ann.id) == "ann@exmaple.org"
    assert len(confirmations(waitlists)) == 1
