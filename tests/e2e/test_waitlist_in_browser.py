"""A waitlist room in real browsers, against gunicorn with 2 workers and the mailer
sending to a real SMTP server on loopback: a visitor signs up, confirms by the emailed
link, refers two friends who confirm theirs, moves up by their boost, is admitted by an
admin from the panel and enters through the emailed claim link, which then refuses a
second use; axe-core finds nothing serious on its pages."""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from building import engine, mailer_of
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect
from recording import RecordingMailbox, smtp_server
from test_panel_in_browser import axe_check

from webapp.redis.keys import Keys

pytestmark = pytest.mark.e2e
PASSWORD = "e2e-waitlist-password"
SECRET = "e2e-waitlist-secret"
PREFIX = f"e2e{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def waitlist_server(redis_url: str) -> Iterator[Server]:
    """One trusted proxy: each person's X-Forwarded-For is their own address, so friends
    are not on the referrer's network (whose boosts would be held for review)."""
    with e2e_server(
        redis_url,
        "e2e-waitlist-gunicorn.log",
        prefix=PREFIX,
        WEBAPP_SECRET_KEY=SECRET,
        WEBAPP_ADMIN_PASSWORD=PASSWORD,
        WEBAPP_PROXY_COUNT="1",
        WEBAPP_SWEEP_INTERVAL="0.25",
    ) as started:
        yield started


@pytest.fixture(scope="module")
def mailbox(waitlist_server: Server, redis_url: str) -> Iterator[RecordingMailbox]:
    """The mailer worker (in a thread) sending the server's outboxes to a real SMTP
    server on loopback; the test reads its links from the mailbox."""
    with smtp_server() as (received, port):
        rooms = engine(redis.Redis.from_url(redis_url, decode_responses=True), Keys(PREFIX))
        mailer = mailer_of(rooms, port, worker="e2e", secret=SECRET,
                           public_url=waitlist_server.url, poll=0.1)  # fmt: skip
        stop = threading.Event()
        worker = threading.Thread(target=mailer.run, args=(stop,), daemon=True)
        worker.start()
        try:
            yield received
        finally:
            stop.set()
            worker.join(10)


def someone(person: Any, address: str) -> Any:
    page = person()
    page.context.set_extra_http_headers({"X-Forwarded-For": address})
    return page


def sign_up(page: Any, url: str, name: str, email: str) -> str:
    """Fills the waitlist's form at ``url``; returns the entry's signed token."""
    page.goto(url)
    page.get_by_label("Your display name").fill(name)
    page.get_by_label("Your email").fill(email)
    page.get_by_role("button", name="Join the waitlist").click()
    expect(page).to_have_url(re.compile(r"/entry/"))
    return str(page.url.rsplit("/", 1)[1])


def confirm(page: Any, server: Server, mailbox: RecordingMailbox, email: str) -> None:
    """Follows the confirmation link mailed to ``email``, and presses its button."""
    page.goto(mailbox.link(email, f"{server.url}/confirm/"))
    page.get_by_role("button", name="Confirm my email").click()
    expect(page.get_by_text("Your email is confirmed.", exact=False).first).to_be_visible()


def test_a_visitor_moves_up_by_referrals_and_is_admitted(
    waitlist_server: Server, mailbox: RecordingMailbox, person: Any
):
    server = waitlist_server
    room = f"e2e-{secrets.token_hex(4)}"
    server.admin(room, kind="waitlist", ordering="priority", referral_boost=100)
    for i in range(2):  # two people ahead, confirmed
        early = someone(person, f"198.51.100.{10 + i}")
        sign_up(early, f"{server.url}/rooms/{room}", f"E{i}", f"early{i}@example.org")
        confirm(early, server, mailbox, f"early{i}@example.org")

    problems = []
    ann = someone(person, "203.0.113.5")
    ann.goto(f"{server.url}/rooms/{room}")
    problems += axe_check(ann, "the sign-up form")
    ann.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_up(ann, f"{server.url}/rooms/{room}", "Ann", "ann@example.org")
    expect(ann.locator(".position .big")).to_have_text("3")
    expect(ann.get_by_text("A confirmation email is on its way")).to_be_visible()
    problems += axe_check(ann, "the entry's page")
    confirm(ann, server, mailbox, "ann@example.org")
    link = ann.locator("#referral-link").input_value()
    assert link.endswith(f"/rooms/{room}?ref=" + link.rsplit("=", 1)[1])
    ann.get_by_role("button", name="Copy link").click()
    expect(ann.locator("#referral-link-status")).not_to_be_empty()

    for i, address in enumerate(("192.0.2.20", "198.18.0.7")):
        friend = someone(person, address)
        friend.goto(link)
        expect(friend.get_by_text("You were invited with the code")).to_be_visible()
        sign_up(friend, link, f"Friend{i}", f"friend{i}@example.org")
        confirm(friend, server, mailbox, f"friend{i}@example.org")

    ann.reload()
    expect(ann.locator("#referrals-credited")).to_have_text("2")
    expect(ann.locator(".position .big")).to_have_text("1")

    admin = person()
    admin.goto(f"{server.url}/admin/")
    admin.get_by_label("Name").fill("admin")
    admin.get_by_label("Password").fill(PASSWORD)
    admin.get_by_role("button", name="Log in").click()
    admin.goto(f"{server.url}/admin/rooms/{room}")
    expect(admin.locator("#waitlist-title")).to_be_visible()
    problems += axe_check(admin, "the panel's waitlist room")
    admin.get_by_label("How many entries, from the head of the line").fill("1")
    admin.get_by_role("button", name="Admit", exact=True).click()
    expect(admin.get_by_text("Admitted 1", exact=False)).to_be_visible()

    ann.reload()
    expect(ann.get_by_text("You have been let in", exact=False)).to_be_visible()

    claim = mailbox.link("ann@example.org", f"{server.url}/claim/")
    ann.goto(claim)
    problems += axe_check(ann, "the claim page")
    ann.get_by_role("button", name="Claim my place").click()
    expect(ann.get_by_role("heading", name="You're in")).to_be_visible()
    again = ann.goto(claim)
    assert again is not None and again.status == 410
    expect(ann.get_by_text("This link has been used already", exact=False)).to_be_visible()
    assert not problems, problems


def test_an_entry_explains_its_referrals_and_corrects_a_mistyped_address(
    waitlist_server: Server, mailbox: RecordingMailbox, person: Any
):
    """The entry's page says what each referral figure counts. Signed up with a typo,
    Wendy asks for the email again (too soon: throttled), corrects her address (sent at
    once); the mistyped address's link then confirms nothing, the corrected one does."""
    server = waitlist_server
    room = f"e2e-{secrets.token_hex(4)}"
    server.admin(room, kind="waitlist", ordering="priority")
    wendy = someone(person, "203.0.113.77")
    sign_up(wendy, f"{server.url}/rooms/{room}", "Wendy", "wendy@exmaple.org")
    referrals = wendy.locator(".referral-figures")
    expect(referrals).to_contain_text("Friends who joined with your link and confirmed")
    expect(referrals).to_contain_text("an organiser checks each one before it counts")
    expect(referrals).to_contain_text("have not confirmed their email: each counts once they do")
    expect(wendy.get_by_text("We sent it to wendy@exmaple.org.")).to_be_visible()
    old_link = mailbox.link("wendy@exmaple.org", f"{server.url}/confirm/")
    wendy.get_by_role("button", name="Send it again").click()
    expect(wendy.get_by_text("We sent one only a moment ago")).to_be_visible()
    wendy.get_by_text("Wrong address? Correct it").click()
    wendy.get_by_label("Your email").fill("wendy@example.org")
    wendy.get_by_role("button", name="Correct and send").click()
    expect(
        wendy.get_by_text("We sent a new confirmation email to wendy@example.org.")
    ).to_be_visible()
    expect(wendy.get_by_text("We sent it to wendy@example.org.")).to_be_visible()
    assert not axe_check(wendy, "the entry's page, corrected")
    screenshot = Path("/work/shots/pages")
    if screenshot.is_dir():
        wendy.set_viewport_size({"width": 390, "height": 844})
        wendy.screenshot(path=str(screenshot / "entry-after-390.png"), full_page=True)
    refused = wendy.goto(old_link)
    assert refused is not None and refused.status == 400
    expect(wendy.get_by_text("sent to an address that was corrected since")).to_be_visible()
    confirm(wendy, server, mailbox, "wendy@example.org")
