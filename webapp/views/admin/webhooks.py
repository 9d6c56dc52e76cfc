"""The panel's webhooks page (issue 31): the endpoints and whether each is sending (or
was disabled after 24 hours of failures), a form for a new one, and each endpoint's
page with its last 100 deliveries, "send again", enable or disable, a new secret and
deletion. A secret is shown on the page the form answers with, once (``no-store``)."""

from __future__ import annotations

from collections.abc import Mapping

from flask import abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from webapp.domain.webhooks import EVENT_TYPES, Endpoint, InvalidEndpoint
from webapp.views import reports, webhooks
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import panel_blueprint

bp = panel_blueprint("admin_webhooks", __name__)
NO_STORE = {"Cache-Control": "no-store"}


@bp.get("/webhooks")
@login_required
def endpoints() -> ResponseReturnValue:
    return endpoints_page()


def endpoints_page(
    status: int = 200, error: str = "", form: Mapping[str, object] | None = None,
    made: tuple[Endpoint, str] | None = None,
) -> ResponseReturnValue:  # fmt: skip
    page = render_template("admin/webhooks.html", endpoints=webhooks().all(), error=error,
                           form=form or {}, made=made, EVENT_TYPES=EVENT_TYPES)  # fmt: skip
    return page, status, NO_STORE if made else {}


@bp.post("/webhooks")
@login_required
def create() -> ResponseReturnValue:
    """A new endpoint: its page answers with the secret, this once."""
    url = request.form.get("url", "").strip()
    events = request.form.getlist("events")
    names = [r.strip() for r in request.form.get("rooms", "").split(",") if r.strip()]
    try:
        made = webhooks().create(url, events, names or None)
    except InvalidEndpoint as error:
        form = {"url": url, "events": events, "rooms": ", ".join(names)}
        return endpoints_page(400, str(error), form)
    return endpoints_page(201, made=made)


@bp.get("/webhooks/<endpoint_id>")
@login_required
def endpoint(endpoint_id: str) -> ResponseReturnValue:
    return endpoint_page(endpoint_id)


def endpoint_page(endpoint_id: str, status: int = 200, secret: str = "") -> ResponseReturnValue:
    found = webhooks().get(endpoint_id)
    if found is None:
        abort(404)
    deliveries = webhooks().deliveries(endpoint_id)
    page = render_template("admin/webhook.html", endpoint=found, secret=secret,
                           deliveries=deliveries, now=reports().now())  # fmt: skip
    return page, status, NO_STORE if secret else {}


@bp.post("/webhooks/<endpoint_id>/enabled")
@login_required
def enable(endpoint_id: str) -> ResponseReturnValue:
    on = request.form.get("enabled") == "1"
    if webhooks().update(endpoint_id, {"enabled": on}) is None:
        abort(404)
    flash("Enabled: its waiting deliveries go now." if on else "Disabled: nothing is sent.")
    return redirect(url_for("admin_webhooks.endpoint", endpoint_id=endpoint_id), 303)


@bp.post("/webhooks/<endpoint_id>/rotate")
@login_required
def rotate(endpoint_id: str) -> ResponseReturnValue:
    """A new secret, on the page this once; the old one signs too for 24 hours."""
    rotated = webhooks().rotate(endpoint_id)
    if rotated is None:
        abort(404)
    return endpoint_page(endpoint_id, 200, secret=rotated[1])


@bp.post("/webhooks/<endpoint_id>/delete")
@login_required
def delete(endpoint_id: str) -> ResponseReturnValue:
    if not webhooks().delete(endpoint_id):
        abort(404)
    flash("Deleted the endpoint and its outbox.")
    return redirect(url_for("admin_webhooks.endpoints"), 303)


@bp.post("/webhooks/<endpoint_id>/deliveries/<delivery_id>/resend")
@login_required
def resend(endpoint_id: str, delivery_id: str) -> ResponseReturnValue:
    """Send again, with the same webhook-id."""
    if not webhooks().resend(endpoint_id, delivery_id[:64]):
        abort(404)
    flash(f"Sending {delivery_id[:64]} again now.")
    return redirect(url_for("admin_webhooks.endpoint", endpoint_id=endpoint_id), 303)
