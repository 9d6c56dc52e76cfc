"""Ordinary pages say nothing in the browser's console (issue 35): leaving the line,
a seat that ends on the room page, a search in the panel."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import visiting
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect
from test_panel_in_browser import PASSWORD, log_in
from test_visitor_pages import admin_post, seat_taken, watched

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def panel_server(redis_url: str) -> Iterator[Server]:
    with e2e_server(
        redis_url,
        "e2e-console-gunicorn.log",
        WEBAPP_ADMIN_PASSWORD=PASSWORD,
        WEBAPP_SWEEP_INTERVAL="0.25",
        WEBAPP_WS_BEAT_SECONDS="1",
    ) as started:
        yield started


def test_leaving_the_line_is_quiet(server: Any, room: Any, person: Any) -> None:
    """Bob leaves the line: the page says he left, and the console stays empty."""
    name = room(capacity=1, dropout_seconds=30)
    seat_taken(server, name)
    bob = person()
    errors = watched(bob)
    visiting.enter(bob, server.url, name, "Bob")
    expect(bob.locator("#line-status .big")).to_have_text("1")
    visiting.leave(bob)
    expect(bob.get_by_role("heading", name=re.compile("^You left the line"))).to_be_visible()
    bob.reload()
    expect(bob.get_by_role("heading", name=re.compile("^You left the line"))).to_be_visible()
    assert errors == [], errors


def test_a_seat_ending_on_the_room_page_is_quiet_and_said(
    server: Any, room: Any, person: Any
) -> None:
    """Nick's seat is ended by an organiser: the room page shows it, a screen reader is
    told (#announce), and the console stays empty."""
    name = room(capacity=1, grace_seconds=2)
    nick = person()
    errors = watched(nick)
    visiting.enter(nick, server.url, name, "Nick")
    expect(nick.locator("#connection")).to_have_attribute("data-state", "live")
    code = nick.locator(".support .code").inner_text()
    admin_post(server, f"/api/admin/rooms/{name}/remove/{code}")
    expect(nick.get_by_text("An organiser removed you.")).to_be_visible()
    expect(nick.locator("#announce")).to_have_text(re.compile("Your seat in .* has ended"))
    assert errors == [], errors


def test_a_search_in_the_panel_is_quiet(panel_server: Server, person: Any) -> None:
    """The admin searches the line and shows it whole again: no console error (no
    Content-Security-Policy violation)."""
    name = f"e2e-q{int(time.time() * 1000) % 10**8}"
    panel_server.admin(name, capacity=1, admission_mode="manual")
    for who in ("Ann", "Bob"):
        visiting.enter(person(), panel_server.url, name, who)
    admin = person()
    errors = watched(admin)
    log_in(admin, panel_server)
    admin.goto(f"{panel_server.url}/admin/rooms/{name}")
    admin.get_by_label("Find someone by name or support code").fill("Bob")
    admin.get_by_role("button", name="Search").click()
    expect(admin.locator("#line-caption")).to_contain_text("1 person matches")
    admin.get_by_role("link", name="Show the whole line").click()
    expect(admin.locator("#line-caption")).to_contain_text("of 2 in line")
    admin.go_back()
    expect(admin.locator("#line-caption")).to_contain_text("1 person matches")
    assert errors == [], errors
