"""A waitlist room's pages (issue 13, phase 2b): signing up with a name, an email and a
referral code, the entry's own page, the confirmation link, the lottery's public draw,
and the panel's waitlist card (held referral boosts, Draw now)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from flask import Flask

from tests.web.conftest import Visitor, mailer_says
from webapp.domain.draw import verify_draw
from webapp.domain.waitlist import Waitlists
from webapp.web.links import confirm_token, entry_of

ROOM = "list"
ENTRY = re.compile(r"/rooms/list/entry/([^/\"?]+)$")
REF_LINK = re.compile(r'value="(http://localhost/rooms/list\?ref=([0-9A-Z]{8}))"')


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


@pytest.fixture
def waitlists(app: Flask) -> Waitlists:
    found: Waitlists = app.extensions["services"].waitlists
    return found


@pytest.fixture
def waitlist(app: Flask) -> str:
    """The waitlist room, and a mailer whose SMTP server answers."""
    app.extensions["services"].rooms.configure(ROOM, {"kind": "waitlist", "ordering": "priority"})
    mailer_says(app, ok=True)
    return ROOM


def sign_up(visitor: Visitor, address: str = "192.0.2.1", ref: str = "", **form: str) -> Any:
    """Posts the sign-up form of /rooms/list (with ?ref= when given), from ``address``."""
    path = f"/rooms/{ROOM}" + (f"?ref={ref}" if ref else "")
    page = visitor.get(path).get_data(as_text=True)
    if ref:
        assert f'name="ref" value="{ref}"' in page
        form.setdefault("ref", ref)
    form["csrf_token"] = visitor.csrf(path)
    return visitor.client.post(
        f"/rooms/{ROOM}/signup", data=form, environ_base={"REMOTE_ADDR": address}
    )


def entry_at(visitor: Visitor, location: str) -> str:
    """The entry id an entry page's address names."""
    match = ENTRY.search(location)
    assert match is not None
    with visitor.client.application.app_context():
        found = entry_of(ROOM, match.group(1))
    assert found is not None
    return found


def text(response: Any) -> str:
    return str(response.get_data(as_text=True))


def test_the_gate_asks_for_a_name_and_an_email(visitor, waitlist):
    """/rooms/<waitlist> is a form for a display name and an email, with no name first."""
    page = text(visitor.join(f"{ROOM}"))
    assert 'name="email"' in page and 'name="name"' in page
    assert "is a waitlist" not in page


def test_signing_up_shows_the_entrys_page(visitor, waitlist):
    """The form leads to the entry's bookmarkable page: place, unconfirmed, referral link."""
    reply = sign_up(visitor, name="Ann", email="ann@example.org")
    assert reply.status_code == 303
    assert ENTRY.search(reply.location)
    page = text(visitor.get(reply.location))
    assert "your place on the waitlist" in page
    assert "A confirmation email is on its way" in page
    assert REF_LINK.search(page)
    assert 'data-copy="referral-link"' in page and "<script>" not in page
    # the gate now leads back to that page; and the address works without the session
    assert visitor.join(f"{ROOM}").location == reply.location
    stranger = Visitor(visitor.client.application.test_client())
    assert stranger.get(reply.location).status_code == 200


def test_a_referral_link_carries_its_code(visitor, waitlist, waitlists):
    """A friend who joins through the link is counted on the referrer's page: pending,
    then credited once confirmed."""
    ann = visitor.get(sign_up(visitor, name="Ann", email="ann@example.org").location)
    code = REF_LINK.search(text(ann)).group(2)
    bob = Visitor(visitor.client.application.test_client())
    joined = sign_up(bob, "198.51.100.7", ref=code, name="Bob", email="bob@example.org")
    assert joined.status_code == 303
    page = text(visitor.get(ann.request.path))
    assert re.search(r'id="referrals-pending">1<', page)
    waitlists.confirm(ROOM, entry_at(bob, joined.location))
    page = text(visitor.get(ann.request.path))
    assert re.search(r'id="referrals-credited">1<', page)


@pytest.mark.parametrize(
    ("email", "words"),
    [("not an address", "not valid"), ("x@mailinator.com", "lasting email address")],
)
def test_a_bad_email_is_explained_on_the_form(visitor, waitlist, waitlists, email, words):
    """A malformed or disposable email re-shows the form (400) saying why; nobody joined."""
    reply = sign_up(visitor, name="Ann", email=email)
    assert reply.status_code == 400
    page = text(reply)
    assert words in page and 'role="alert"' in page and f'value="{email}"' in page
    assert waitlists.figures(ROOM).entries == 0


def test_a_name_is_required(visitor, waitlist, waitlists):
    """Without a display name the form comes back with the reason."""
    reply = sign_up(visitor, name="  ", email="ann@example.org")
    assert reply.status_code == 400 and "Please type a name" in text(reply)
    assert waitlists.figures(ROOM).entries == 0


def test_a_forged_entry_address_is_not_found(visitor, waitlist, waitlists):
    """The entry id alone (public in a draw) or a tampered token opens nothing."""
    location = sign_up(visitor, name="Ann", email="ann@example.org").location
    entry = entry_at(visitor, location)
    assert visitor.get(f"/rooms/{ROOM}/entry/{entry}").status_code == 404
    assert visitor.get(location[:-3] + "abc").status_code == 404


def confirm_link(app: Flask, entry: str) -> str:
    with app.test_request_context():
        return f"/confirm/{confirm_token(ROOM, entry)}"


def test_the_confirm_link_shows_then_confirms(app, visitor, waitlist, waitlists):
    """GET shows a button and changes nothing (scanners prefetch links); POST with the
    CSRF token confirms and leads to the entry's page."""
    entry = waitlists.join(ROOM, "Ann", "ann@example.org")
    link = confirm_link(app, entry.id)
    page = visitor.get(link)
    assert page.status_code == 200 and "Confirm my email" in text(page)
    assert not waitlists.position(ROOM, entry.id).confirmed
    refused = visitor.client.post(link)  # no CSRF token
    assert refused.status_code == 400
    assert not waitlists.position(ROOM, entry.id).confirmed
    reply = visitor.client.post(link, data={"csrf_token": visitor.csrf(link)})
    assert reply.status_code == 303 and ENTRY.search(reply.location)
    assert waitlists.position(ROOM, entry.id).confirmed
    assert "Your email is confirmed" in text(visitor.get(reply.location))


def test_tampered_and_expired_links_are_refused(app, visitor, waitlist, waitlists, monkeypatch):
    """A changed or old confirmation link gets a friendly page and confirms nothing."""
    entry = waitlists.join(ROOM, "Ann", "ann@example.org")
    tampered = confirm_link(app, entry.id)[:-2] + "xx"
    real = time.time
    monkeypatch.setattr("itsdangerous.timed.time.time", lambda: real() - 4 * 86400)
    expired = confirm_link(app, entry.id)
    monkeypatch.setattr("itsdangerous.timed.time.time", real)
    for link in (tampered, expired):
        page = visitor.get(link)
        assert page.status_code == 400 and "This link does not work" in text(page)
        csrf = visitor.csrf("/")
        assert visitor.client.post(link, data={"csrf_token": csrf}).status_code == 400
    assert not waitlists.position(ROOM, entry.id).confirmed


def test_the_draw_page_lists_the_verifiable_order(app, visitor, waitlists, panel):
    """A lottery shows its seed's hash before the draw; after it, the page's order is the
    one verify_draw recomputes from the seed and the participants."""
    app.extensions["services"].rooms.configure(ROOM, {"kind": "waitlist", "ordering": "lottery"})
    for i in range(12):
        waitlists.confirm(ROOM, waitlists.join(ROOM, f"P{i}", f"p{i}@example.org").id)
    commitment = waitlists.draw_record(ROOM).commitment
    assert commitment in text(visitor.join(f"{ROOM}"))
    assert "Draw now" in panel.page(f"/admin/rooms/{ROOM}")
    assert "Held the draw" in panel.flashed(panel.post(f"/admin/rooms/{ROOM}/draw"))
    page = text(visitor.get(f"/rooms/{ROOM}/draw"))
    record = waitlists.draw_record(ROOM)
    assert record.seed in page and commitment in page
    shown = re.findall(r"<li><code>([^<]+)</code></li>", page)
    assert shown == verify_draw(record.seed, waitlists.draw_entries(ROOM))
    assert len(shown) == 12
    listed = text(visitor.get(f"/rooms/{ROOM}/draw.txt")).split()
    assert sorted(listed) == sorted(shown)
    entry = sign_up(visitor, name="Late", email="late@example.org").location
    assert f"/rooms/{ROOM}/draw" in text(visitor.get(entry))


def held_referral(waitlists: Waitlists) -> tuple[str, str]:
    """Ann refers Bob from her own network: Bob's boost is held. (Ann's id, Bob's id)."""
    ann = waitlists.join(ROOM, "Ann", "ann@example.org", address="203.0.113.5")
    waitlists.confirm(ROOM, ann.id)
    bob = waitlists.join(ROOM, "Bob", "bob@example.org", ann.referral_code, "203.0.113.9")
    waitlists.confirm(ROOM, bob.id)
    assert [h.referee for h in waitlists.held(ROOM)] == [bob.id]
    return ann.id, bob.id


@pytest.mark.parametrize(("action", "score", "kind"), [("release", 100, "referral_credit"),
                                                      ("void", 0, "referral_void")])  # fmt: skip
def test_the_panel_reviews_held_boosts(app, panel, waitlist, waitlists, action, score, kind):
    """The waitlist card lists a held boost; Release credits it, Void drops it, each
    audited under the admin's name; without CSRF or a login nothing changes."""
    ann, bob = held_referral(waitlists)
    page = panel.page(f"/admin/rooms/{ROOM}")
    assert "Referral boosts held for review" in page and "the same network" in page
    assert "Release" in page and "Void" in page
    path = f"/admin/rooms/{ROOM}/held/{bob}/{action}"
    assert panel.post(path, csrf=False).status_code == 400
    stranger = app.test_client()
    assert stranger.post(path).status_code in (302, 303, 400, 401)
    assert waitlists.held(ROOM)
    said = panel.flashed(panel.post(path))
    assert ("Released" if action == "release" else "Voided") in said
    assert waitlists.held(ROOM) == []
    assert waitlists.position(ROOM, ann).score == score
    audit = app.extensions["services"].reports.audit(ROOM, kinds=[kind])
    assert audit and audit[0].who == "ada"
    again = panel.flashed(panel.post(path))  # reviewed already
    assert "Nothing changed" in again


def test_the_panel_shows_the_waitlists_figures(panel, waitlist, waitlists):
    """Entries, confirmed and admitted on the room's page, and the emails' states; the
    audit filter has the new kinds."""
    waitlists.join(ROOM, "Ann", "ann@example.org")
    waitlists.confirm(ROOM, waitlists.join(ROOM, "Bob", "bob@example.org").id)
    page = panel.page(f"/admin/rooms/{ROOM}")
    assert re.search(r"<dt>Entries</dt><dd>2</dd>", page)
    assert re.search(r"<dt>Confirmed</dt><dd>1</dd>", page)
    assert "Admitted 1" in panel.flashed(
        panel.post(f"/admin/rooms/{ROOM}/admit", count="5", request_id="r1")
    )
    services = panel.client.application.extensions["services"]
    services.client.delete(services.keys.mail_health)  # no mailer running
    page = panel.page(f"/admin/rooms/{ROOM}")
    assert re.search(r"<dt>Admitted</dt><dd>1</dd>", page)
    # Two confirmations and one admission in the outbox, no mailer running
    assert re.search(r"<dt>Not sent yet</dt><dd>3</dd>", page)
    assert re.search(r"<dt>Sent</dt><dd>0</dd>", page)
    assert "no mailer has checked its SMTP server lately" in page  # said on every panel page
    audit = panel.page(f"/admin/rooms/{ROOM}/audit?kind=referral_hold")
    assert "Referral held for review" in audit


def test_a_deleted_waitlist_forgets_the_browsers_entry(app, visitor, waitlist):
    """After the room is deleted and made again, the old entry's page is a 404 and the
    gate shows the form again instead of leading back to it."""
    location = sign_up(visitor, name="Ann", email="ann@example.org").location
    rooms = app.extensions["services"].rooms
    rooms.delete(ROOM)
    rooms.configure(ROOM, {"kind": "waitlist"})
    assert visitor.get(location).status_code == 404
    page = visitor.join(f"{ROOM}")
    assert page.status_code == 200 and 'name="email"' in text(page)


def test_a_lapsed_entrys_page_says_so(app, visitor, waitlist, clock):
    """An admitted entry not claimed in time: its page says the place went on."""
    services = app.extensions["services"]
    services.rooms.configure(ROOM, {"claim_seconds": 60})
    location = sign_up(visitor, name="Ann", email="ann@example.org").location
    services.waitlists.confirm(ROOM, entry_at(visitor, location))
    services.rooms.admit(ROOM, 1)
    clock.advance(60)
    services.waitlists.sweep(ROOM)
    page = text(visitor.get(location))
    assert "was not claimed in time" in page
    assert "Your email is confirmed" not in page


def test_the_panel_finds_an_entry_and_voids_a_credited_boost_from_its_tree(
    app, panel, waitlist, waitlists
):
    """Search by an alias of the email opens the entry's page: its referrer and its
    referral tree with each leg's state; Void on a credited leg takes its points back
    and comes back to the entry's page; an unknown email says so."""
    ann = waitlists.join(ROOM, "Ann", "Ann.Lee@gmail.com", address="192.0.2.1")
    waitlists.confirm(ROOM, ann.id)
    bob = waitlists.join(ROOM, "Bob", "bob@example.org", ann.referral_code, "198.51.100.7")
    waitlists.confirm(ROOM, bob.id)
    cat = waitlists.join(ROOM, "Cat <b>", "cat@example.org", bob.referral_code, "203.0.113.5")
    found = panel.client.get(
        f"/admin/rooms/{ROOM}/entries", query_string={"q": "annlee@googlemail.com"}
    )
    assert found.status_code == 303 and found.location.endswith(f"/entries/{ann.id}")
    page = panel.page(found.location)
    assert "ann.lee@gmail.com" in page.lower() and "Nobody: this entry joined" in page
    assert "Credited</span>" not in page and "Credited: +100" in page
    assert "Cat &lt;b&gt;" in page and "Pending: not confirmed yet" in page  # two levels
    said = panel.flashed(panel.post(f"/admin/rooms/{ROOM}/held/{bob.id}/void", entry=ann.id))
    assert "Voided the referral" in said and "Void (an admin voided it)" in said
    assert waitlists.position(ROOM, ann.id).score == 0
    bobs = panel.page(f"/admin/rooms/{ROOM}/entries/{bob.id}")
    assert "Referred by" in bobs and f"/entries/{ann.id}" in bobs and cat.id in bobs
    missing = panel.client.get(f"/admin/rooms/{ROOM}/entries", query_string={"q": "x@example.org"})
    assert "No entry has the email" in panel.flashed(missing)
    gone = panel.client.get(f"/admin/rooms/{ROOM}/entries/not-an-entry")
    assert "not on this waitlist" in panel.flashed(gone)


def test_without_a_working_smtp_server_nothing_promises_an_email(
    app, panel, visitor, waitlist, waitlists
):
    """The mailer finds no SMTP server: the sign-up form and the entry's page say the
    confirmation goes out once mail can be sent (nothing "on its way", no "send it
    again"), the address can still be corrected, and the panel's emails say why none
    goes out."""
    mailer_says(app, ok=False, error="Connection refused")
    form = text(visitor.get(f"/rooms/{ROOM}"))
    assert "cannot send email right now" in form and "We send a confirmation email" not in form
    location = sign_up(visitor, name="Ann", email="ann@example.org").location
    page = text(visitor.get(location))
    assert "Your email is not confirmed yet." in page
    assert "on its way" not in page and "cannot send email right now" in page
    assert "We sent it to" not in page and ">Send it again</button>" not in page
    assert "Wrong address? Correct it" in page
    admin = panel.page(f"/admin/rooms/{ROOM}")
    assert "Mail cannot be sent: no SMTP server answers at 127.0.0.1:25" in admin
    assert "Connection refused" in admin


def test_the_confirm_page_names_the_waitlist_by_its_title(app, visitor, waitlist, waitlists):
    """The confirmation page says the title the email and every other page say, not the
    room's address; the admin's description keeps its own direction (dir="auto")."""
    app.extensions["services"].visits.configure(
        ROOM, {"title": "Early access list", "description": "Five pairs, one each."}
    )
    link = confirm_link(app, waitlists.join(ROOM, "Ann", "ann@example.org").id)
    page = text(visitor.get(link))
    assert 'waitlist for <span class="room-name">Early access list</span>' in page
    assert f'<span class="room-name">{ROOM}</span>' not in page
    signup = text(visitor.get(f"/rooms/{ROOM}"))
    assert '<p class="room-description" dir="auto">Five pairs, one each.</p>' in signup
