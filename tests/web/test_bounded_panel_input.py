"""Bounded input in the panel (issue 25, hole 5): a line break in ``next`` and a huge
``page=`` are a clear answer, never a 500 or a 503 that blames Redis."""

from __future__ import annotations

from typing import Any

import pytest

from tests.web.test_admin_login import Browser


@pytest.fixture
def admin(panel_app: Any) -> Browser:
    browser = Browser(panel_app.test_client())
    assert browser.login().status_code == 303
    return browser


@pytest.mark.parametrize(
    "target", ["/admin/\r\nLocation: https://evil.example/", "/admin/\nX: y", "/admin/\x00"]
)
def test_a_line_break_in_next_goes_to_the_panel(panel_app: Any, target: str) -> None:
    """GET (logged in) and POST of the login form: the panel's home, no 500."""
    browser = Browser(panel_app.test_client())
    reply = browser.login(next=target)
    assert reply.status_code == 303 and reply.location == "/admin/"
    again = browser.client.get("/admin/login", query_string={"next": target})
    assert again.status_code == 302 and again.location == "/admin/"


@pytest.mark.parametrize("page", ["99999999999999999999", "-1", "0", "x", "1e9"])
def test_a_bad_or_huge_page_is_a_400(admin: Browser, panel_app: Any, page: str) -> None:
    """The line's page out of bounds: 400 saying so; the room's page still works."""
    panel_app.extensions["services"].rooms.configure("hall", {"capacity": 1})
    reply = admin.client.get("/admin/rooms/hall", query_string={"page": page})
    assert reply.status_code == 400
    assert "did not add up" in reply.get_data(as_text=True)
    assert admin.client.get("/admin/rooms/hall?page=2").status_code == 200
