"""A site room's site keys in the admin panel (issue 29): made on the room's page and
shown there once (never in a redirect or a later page), listed by id and label, revoked;
the key made in the panel counts a release's sale; a chat room has no such card."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask

from tests.web.test_admin_panel import Panel

ROOM = "/admin/rooms/shop"
SITE = "https://shop.example/"


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


def test_a_key_is_made_shown_once_and_revoked(panel: Panel, visits: Any, app: Flask) -> None:
    visits.configure("shop", {"capacity": 1, "site_url": SITE})
    assert "No site key yet" in panel.page(ROOM)
    made = panel.post(f"{ROOM}/site-keys", label="checkout <b>")
    assert made.status_code == 201 and made.headers["Cache-Control"] == "no-store"
    page = made.get_data(as_text=True)
    key = re.search(r'value="(wrsk_[0-9a-f]{8}_[A-Za-z0-9_-]{32})"', page)
    assert key is not None and "not shown again" in page
    assert "checkout &lt;b&gt;" in page  # the label is escaped
    key_id = key.group(1)[5:13]
    later = panel.page(ROOM)
    assert key.group(1) not in later and key_id in later  # listed, never shown again
    services = app.extensions["services"]
    assert services.site_keys.check("shop", key.group(1)) == key_id
    revoked = panel.flashed(panel.post(f"{ROOM}/site-keys/{key_id}/revoke"))
    assert f"Revoked the site key {key_id}" in revoked
    assert services.site_keys.check("shop", key.group(1)) is None
    again = panel.flashed(panel.post(f"{ROOM}/site-keys/{key_id}/revoke"))
    assert "Nothing changed" in again
    audit = services.reports.audit("shop")
    details = [e.detail for e in audit if e.kind == "site_key"]
    assert details[0] == f"revoked {key_id}" and details[1].startswith(f"made {key_id}")


def test_forms_need_the_csrf_token(panel: Panel, visits: Any, app: Flask) -> None:
    visits.configure("shop", {"capacity": 1, "site_url": SITE})
    assert panel.post(f"{ROOM}/site-keys", csrf=False).status_code == 400
    assert app.extensions["services"].site_keys.live("shop") == []


def test_a_chat_room_has_no_site_keys(panel: Panel, visits: Any) -> None:
    visits.configure("hall", {"capacity": 1})
    assert "Site keys" not in panel.page("/admin/rooms/hall")
