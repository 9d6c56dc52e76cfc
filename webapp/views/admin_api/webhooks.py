"""The admin JSON API's webhook endpoints, /api/admin/webhooks (issue 31; the bearer
token and its throttle are the admin API's: docs/api.md, docs/webhooks.md). A secret is
in the answer to a create or a rotate, never again."""

from __future__ import annotations

from flask import jsonify
from flask.typing import ResponseReturnValue

from webapp.domain.webhooks import Delivery, Endpoint, InvalidEndpoint
from webapp.views import webhooks
from webapp.views.admin_api.routes import admin_only, bp
from webapp.views.shared.errors import error_response
from webapp.views.shared.json_body import json_object


@bp.errorhandler(InvalidEndpoint)
def invalid_endpoint(error: InvalidEndpoint) -> ResponseReturnValue:
    return error_response(400, str(error))


def no_endpoint() -> ResponseReturnValue:
    return error_response(404, "no webhook endpoint of that id")


@bp.post("/webhooks")
@admin_only
def create_webhook() -> ResponseReturnValue:
    """``{"url", "events" (absent: every type), "rooms" (absent: every room)}``: the
    endpoint, with its secret this once."""
    body = json_object(required=True, known=("url", "events", "rooms"))
    endpoint, secret = webhooks().create(body.get("url"), body.get("events"), body.get("rooms"))
    return jsonify({**endpoint.public(), "secret": secret}), 201


@bp.get("/webhooks")
@admin_only
def list_webhooks() -> ResponseReturnValue:
    return jsonify(webhooks=[e.public() for e in webhooks().all()])


@bp.get("/webhooks/<endpoint_id>")
@admin_only
def get_webhook(endpoint_id: str) -> ResponseReturnValue:
    """The endpoint and its last 100 deliveries, newest first."""
    endpoint = webhooks().get(endpoint_id)
    if endpoint is None:
        return no_endpoint()
    return jsonify({**endpoint.public(), "deliveries": deliveries_of(endpoint)})


@bp.patch("/webhooks/<endpoint_id>")
@admin_only
def change_webhook(endpoint_id: str) -> ResponseReturnValue:
    """Changes url, events, rooms or enabled (true again after the worker disabled it)."""
    endpoint = webhooks().update(
        endpoint_id, json_object(required=True, known=("url", "events", "rooms", "enabled"))
    )
    return no_endpoint() if endpoint is None else jsonify(endpoint.public())


@bp.delete("/webhooks/<endpoint_id>")
@admin_only
def delete_webhook(endpoint_id: str) -> ResponseReturnValue:
    return ("", 204) if webhooks().delete(endpoint_id) else no_endpoint()


@bp.post("/webhooks/<endpoint_id>/rotate")
@admin_only
def rotate_webhook_secret(endpoint_id: str) -> ResponseReturnValue:
    """A new secret, shown this once; the old one signs too for 24 hours."""
    rotated = webhooks().rotate(endpoint_id)
    if rotated is None:
        return no_endpoint()
    endpoint, secret = rotated
    return jsonify({**endpoint.public(), "secret": secret})


@bp.post("/webhooks/<endpoint_id>/deliveries/<delivery_id>/resend")
@admin_only
def resend_webhook(endpoint_id: str, delivery_id: str) -> ResponseReturnValue:
    """Sends a delivery again now, with the same webhook-id."""
    if not webhooks().resend(endpoint_id, delivery_id[:64]):
        return error_response(404, "no such delivery of that endpoint")
    return "", 202


def deliveries_of(endpoint: Endpoint) -> list[dict[str, object]]:
    return [delivery_json(d) for d in webhooks().deliveries(endpoint.id)]


def delivery_json(d: Delivery) -> dict[str, object]:
    return {
        "id": d.id,
        "type": d.type,
        "room": d.room,
        "at": d.at,
        "state": d.state,
        "attempts": d.attempts,
        "response_status": d.status or None,
        "error": d.error,
        "next_attempt": d.next,
        "last_attempt": d.last,
    }
