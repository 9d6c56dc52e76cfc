"""The panel's webhooks pages in Chromium (issue 31): the endpoints (one sending, one
failing and retried, one disabled) and an endpoint's deliveries, at 390 and 1280 px,
with no serious axe violation and a quiet console."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect
from receiver import Receiver
from test_panel_in_browser import PASSWORD, log_in
from test_visitor_pages import serious, watched

from webapp.domain.clock import Clock
from webapp.domain.webhooks import Webhooks
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts
from webapp.workers.webhooks import WebhookWorker

pytestmark = pytest.mark.e2e
SHOTS = Path(os.environ.get("WEBAPP_SHOTS", "/work/shots/i31-hooks"))
PREFIX = "e2ehooks"


@pytest.fixture(scope="module")
def hooks_server(redis_url: str) -> Iterator[Server]:
    with e2e_server(
        redis_url, "e2e-webhooks-gunicorn.log", prefix=PREFIX, WEBAPP_ADMIN_PASSWORD=PASSWORD
    ) as started:
        yield started


def shoot(page: Any, name: str) -> None:
    if not SHOTS.is_dir():
        return
    for width, height in ((390, 844), (1280, 860)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def test_the_webhook_pages(hooks_server: Server, redis_url: str, person: Any) -> None:
    """The list says each endpoint's status; an endpoint's page lists its deliveries
    with status, tries and response, each with "send again"."""
    good, bad = Receiver(), Receiver()
    bad.status = 500
    server = hooks_server
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    webhooks = Webhooks(client, Keys(PREFIX), Scripts(client), Clock())
    worker = WebhookWorker(webhooks, Clock(), worker="e2e", threads=2)
    stop = threading.Event()
    running = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    try:
        made = server.as_admin("POST", "/api/admin/webhooks", {"url": good.url})
        server.as_admin("POST", "/api/admin/webhooks", {"url": bad.url, "rooms": ["hall"]})
        off = server.as_admin("POST", "/api/admin/webhooks", {"url": "https://off.example/in"})
        server.as_admin("PATCH", f"/api/admin/webhooks/{off['id']}", {"enabled": False})
        server.admin("hall", capacity=1)
        for name in ("Ann", "Bo"):
            server.visitor(name).join("hall")
        running.start()
        deadline = time.monotonic() + 20
        while len(good.ok()) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)  # the failing endpoint's second try
        page = person()
        errors = watched(page)
        log_in(page, server)
        page.get_by_role("link", name="Webhooks").click()
        expect(page.get_by_text("Disabled by an admin")).to_be_visible()
        expect(page.get_by_text("Sending; failing since")).to_be_visible()
        shoot(page, "webhooks")
        assert serious(page) == []
        page.get_by_role("link", name=good.url).click()
        expect(page.get_by_role("button", name="Send again").first).to_be_visible()
        expect(page.get_by_role("cell", name="Delivered").first).to_be_visible()
        shoot(page, "webhook-deliveries")
        assert serious(page) == []
        page.get_by_role("button", name="Send again").first.click()
        expect(page.get_by_text("again now")).to_be_visible()
        expect(page).to_have_url(f"{server.url}/admin/webhooks/{made['id']}")
        assert errors == [], errors
    finally:
        stop.set()
        if running.is_alive():
            running.join(timeout=10)
        good.stop()
        bad.stop()
        client.close()
