"""The admin API's webhook endpoints (issue 31): made with a secret shown once, listed,
changed, rotated, deleted; bad input is a 400 that says why, never a 500."""

from __future__ import annotations

import pytest

from webapp.domain.webhooks import EVENT_TYPES

URL = "https://hooks.example/in"


def test_create_shows_the_secret_once(client, admin):
    """201 with whsec_ secret; GET and the list never show it."""
    made = client.post("/api/admin/webhooks", json={"url": URL, "rooms": ["a"]}, headers=admin)
    assert made.status_code == 201
    body = made.get_json()
    assert body["secret"].startswith("whsec_") and body["events"] == list(EVENT_TYPES)
    assert body["rooms"] == ["a"] and body["enabled"] is True
    one = client.get(f"/api/admin/webhooks/{body['id']}", headers=admin).get_json()
    assert "secret" not in one and one["deliveries"] == []
    listed = client.get("/api/admin/webhooks", headers=admin).get_json()["webhooks"]
    assert [e["id"] for e in listed] == [body["id"]] and "secret" not in listed[0]


def test_patch_rotate_delete(client, admin):
    """PATCH changes events and enabled; rotate gives a new secret; DELETE is 204 then 404."""
    made = client.post("/api/admin/webhooks", json={"url": URL}, headers=admin).get_json()
    path = f"/api/admin/webhooks/{made['id']}"
    changed = client.patch(path, json={"events": ["room.changed"], "enabled": False}, headers=admin)
    assert changed.status_code == 200
    assert changed.get_json()["events"] == ["room.changed"] and not changed.get_json()["enabled"]
    rotated = client.post(f"{path}/rotate", headers=admin).get_json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != made["secret"]
    assert client.delete(path, headers=admin).status_code == 204
    assert client.delete(path, headers=admin).status_code == 404
    assert client.get(path, headers=admin).status_code == 404
    assert client.post(f"{path}/deliveries/msg_x/resend", headers=admin).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"url": "ftp://hooks.example/"},
        {"url": "https://"},
        {"url": "https://h:notaport/"},
        {"url": 5},
        {},
        {"url": URL, "events": ["visitor.flew"]},
        {"url": URL, "events": "visitor.joined"},
        {"url": URL, "rooms": ["no spaces"]},
        {"url": URL, "secret": "mine"},
    ],
)
def test_bad_input_is_a_clear_400(client, admin, body):
    """A URL not http(s) with a host, unknown events, bad rooms, unknown fields: 400."""
    response = client.post("/api/admin/webhooks", json=body, headers=admin)
    assert response.status_code == 400
    assert response.get_json()["error"]


def test_patch_refuses_bad_values(client, admin):
    made = client.post("/api/admin/webhooks", json={"url": URL}, headers=admin).get_json()
    path = f"/api/admin/webhooks/{made['id']}"
    assert client.patch(path, json={"enabled": "yes"}, headers=admin).status_code == 400
    assert client.patch(path, json={"url": "javascript:x"}, headers=admin).status_code == 400
    assert client.patch("/api/admin/webhooks/ep_none", json={}, headers=admin).status_code == 404


def test_the_token_is_required(client):
    """Without the admin token: 401."""
    assert client.get("/api/admin/webhooks").status_code == 401
    assert client.post("/api/admin/webhooks", json={"url": URL}).status_code == 401
