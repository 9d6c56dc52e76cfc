"""The panel's webhooks page (issue 31): an endpoint made with its secret shown once,
its deliveries with status, tries and the response's status, "send again", and an
endpoint the worker disabled after 24 hours of failures shown as such."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from receiver import Receiver

from tests.web.test_admin_panel import Panel
from webapp.domain.clock import Clock
from webapp.workers.webhooks import WebhookWorker


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


@pytest.fixture
def receiver() -> Any:
    server = Receiver()
    yield server
    server.stop()


def drain(worker: WebhookWorker) -> None:
    for _ in range(20):
        busy = worker.run_once()
        worker.wait_idle()
        if not busy:
            return


def test_an_endpoint_is_made_and_its_deliveries_shown(
    panel: Panel, visits: Any, app: Flask, receiver: Receiver, clock: Any
) -> None:
    """The secret once (no-store); the deliveries with status, tries, response; send again."""
    made = panel.post("/admin/webhooks", url=receiver.url, events=["visitor.joined"])
    assert made.status_code == 201 and made.headers["Cache-Control"] == "no-store"
    page = made.get_data(as_text=True)
    secret = re.search(r'value="(whsec_[A-Za-z0-9+/=]+)"', page)
    assert secret is not None and "not shown again" in page
    listed = panel.page("/admin/webhooks")
    assert receiver.url in listed and secret.group(1) not in listed and "Sending" in listed
    visits.configure("hall", {"capacity": 1})
    visits.join("hall", identity="a")
    services = app.extensions["services"]
    worker = WebhookWorker(services.webhooks, Clock(clock), worker="t", threads=2)
    drain(worker)
    (endpoint,) = services.webhooks.all()
    page = panel.page(f"/admin/webhooks/{endpoint.id}")
    assert "visitor.joined" in page and "Delivered" in page and ">204<" in page
    (delivery,) = services.webhooks.deliveries(endpoint.id)
    again = panel.flashed(
        panel.post(f"/admin/webhooks/{endpoint.id}/deliveries/{delivery.id}/resend")
    )
    assert f"Sending {delivery.id} again" in again
    drain(worker)
    assert [r.id for r in receiver.ok()] == [delivery.id, delivery.id]
    worker.pool.shutdown()


def test_a_disabled_endpoint_says_so(
    panel: Panel, visits: Any, app: Flask, receiver: Receiver, clock: Any
) -> None:
    """Failing for 24 hours: the list and its page say it was disabled, and why."""
    services = app.extensions["services"]
    endpoint, _ = services.webhooks.create(receiver.url)
    receiver.status = 500
    visits.configure("hall", {"capacity": 1})
    visits.join("hall", identity="a")
    worker = WebhookWorker(services.webhooks, Clock(clock), worker="t", threads=2)
    for _ in range(40):
        drain(worker)
        clock.advance(3600)
    worker.pool.shutdown()
    for path in ("/admin/webhooks", f"/admin/webhooks/{endpoint.id}"):
        assert "Disabled after 24 hours of failures" in panel.page(path)
    assert "Given up" in panel.page(f"/admin/webhooks/{endpoint.id}")


def test_bad_urls_and_forms_without_csrf_are_refused(panel: Panel) -> None:
    """A URL that is not http(s) re-renders the form with the error (400); no CSRF: 400."""
    refused = panel.post("/admin/webhooks", url="gopher://x")
    assert refused.status_code == 400
    assert "http or https" in refused.get_data(as_text=True)
    assert panel.post("/admin/webhooks", url="https://x.example/", csrf=False).status_code == 400
    assert panel.client.get("/admin/webhooks/ep_missing").status_code == 404


def test_an_endpoint_is_disabled_rotated_and_deleted(panel: Panel, app: Flask) -> None:
    """Disable and enable say so; a new secret is shown once (no-store); delete is 303."""
    services = app.extensions["services"]
    endpoint, first = services.webhooks.create("https://hooks.example/in")
    path = f"/admin/webhooks/{endpoint.id}"
    assert "Disabled by an admin" in panel.flashed(panel.post(f"{path}/enabled", enabled="0"))
    assert "Sending" in panel.flashed(panel.post(f"{path}/enabled", enabled="1"))
    rotated = panel.post(f"{path}/rotate")
    assert rotated.status_code == 200 and rotated.headers["Cache-Control"] == "no-store"
    secret = re.search(r'value="(whsec_[A-Za-z0-9+/=]+)"', rotated.get_data(as_text=True))
    assert secret is not None and secret.group(1) != first
    assert secret.group(1) not in panel.page(path)
    assert "Deleted the endpoint" in panel.flashed(panel.post(f"{path}/delete"))
    assert services.webhooks.get(endpoint.id) is None
