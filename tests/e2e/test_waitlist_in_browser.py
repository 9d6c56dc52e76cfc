"""A waitlist room in real browsers, against gunicorn with 2 workers: a visitor signs
up, confirms by the link, refers two friends who confirm, moves up by their boost and is
admitted by an admin from the panel; axe-core finds nothing serious on its pages."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from gunicorn_app import Server, run_gunicorn
from itsdangerous import URLSafeSerializer, URLSafeTimedSerializer
from playwright.sync_api import expect
from test_panel_in_browser import axe_check

pytestmark = pytest.mark.e2e
PASSWORD = "e2e-waitlist-password"
SECRET = "e2e-waitlist-secret"


@pytest.fixture(scope="module")
def waitlist_server(redis_url: str) -> Iterator[Server]:
    """One trusted proxy: each person's X-Forwarded-For is their own address, so friends
    are not on the referrer's network (whose boosts would be held for review)."""
    env = {
        "REDIS_URL": redis_url,
        "WEBAPP_REDIS_PREFIX": f"e2e{secrets.token_hex(3)}",
        "WEBAPP_SECRET_KEY": SECRET,
        "WEBAPP_ADMIN_PASSWORD": PASSWORD,
        "WEBAPP_PROXY_COUNT": "1",
        "WEBAPP_SWEEP_INTERVAL": "0.25",
        "WEB_CONCURRENCY": "2",
    }
    with run_gunicorn(env, log_name="e2e-waitlist-gunicorn.log") as started:
        yield started


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


def confirm(page: Any, server: Server, token: str) -> None:
    """Follows the confirmation link the mailer would send, and presses its button."""
    room, entry = URLSafeSerializer(SECRET, salt="entry").loads(token)
    link = URLSafeTimedSerializer(SECRET, salt="confirm").dumps([room, entry])
    page.goto(f"{server.url}/confirm/{link}")
    page.get_by_role("button", name="Confirm my email").click()
    expect(page.get_by_text("Your email is confirmed.", exact=False).first).to_be_visible()


def test_a_visitor_moves_up_by_referrals_and_is_admitted(waitlist_server: Server, person: Any):
    server = waitlist_server
    room = f"e2e-{secrets.token_hex(4)}"
    server.admin(room, kind="waitlist", ordering="priority", referral_boost=100)
    for i in range(2):  # two people ahead, confirmed
        early = someone(person, f"198.51.100.{10 + i}")
        confirm(early, server, sign_up(early, f"{server.url}/rooms/{room}", f"E{i}",
                                       f"early{i}@example.org"))  # fmt: skip

    problems = []
    ann = someone(person, "203.0.113.5")
    ann.goto(f"{server.url}/rooms/{room}")
    problems += axe_check(ann, "the sign-up form")
    ann.context.grant_permissions(["clipboard-read", "clipboard-write"])
    token = sign_up(ann, f"{server.url}/rooms/{room}", "Ann", "ann@example.org")
    expect(ann.locator(".position .big")).to_have_text("3")
    expect(ann.get_by_text("A confirmation email is on its way")).to_be_visible()
    problems += axe_check(ann, "the entry's page")
    confirm(ann, server, token)
    link = ann.locator("#referral-link").input_value()
    assert link.endswith(f"/rooms/{room}?ref=" + link.rsplit("=", 1)[1])
    ann.get_by_role("button", name="Copy link").click()
    expect(ann.locator("#referral-link-status")).not_to_be_empty()

    for i, address in enumerate(("192.0.2.20", "198.18.0.7")):
        friend = someone(person, address)
        friend.goto(link)
        expect(friend.get_by_text("You were invited with the code")).to_be_visible()
        confirm(friend, server, sign_up(friend, link, f"Friend{i}", f"friend{i}@example.org"))

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
    admin.get_by_label("How many people, from the head of the line").fill("1")
    admin.get_by_role("button", name="Admit", exact=True).click()
    expect(admin.get_by_text("Admitted 1", exact=False)).to_be_visible()

    ann.reload()
    expect(ann.get_by_text("You have been let in", exact=False)).to_be_visible()
    assert not problems, problems
