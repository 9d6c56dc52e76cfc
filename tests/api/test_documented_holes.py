"""Issue 25, hole 6: the document says a waitlist join needs an email, and every key
flask-limiter writes starts with WEBAPP_REDIS_PREFIX."""

from __future__ import annotations

import json
from importlib import resources

from webapp import create_app

DOCUMENT = json.loads(resources.files("webapp").joinpath("openapi.json").read_text())


def test_the_document_says_a_waitlist_join_needs_an_email(client, make_room):
    """The join's body and its 400 say so, and the app does refuse such a join."""
    body = DOCUMENT["components"]["schemas"]["JoinRequest"]
    assert "waitlist" in body["description"] and "email" in body["description"]
    assert "REQUIRED" in body["properties"]["email"]["description"]
    refused = DOCUMENT["paths"]["/api/rooms/{room}/join"]["post"]["responses"]["400"]
    assert "no email" in refused["description"]
    make_room("list", kind="waitlist")
    reply = client.post("/api/rooms/list/join", json={"name": "Ann"})
    assert reply.status_code == 400 and "email" in reply.get_json()["error"]


def test_the_limiters_keys_carry_the_prefix(redis_url, r, tmp_path):
    """A refused admin credential is counted under <prefix>:limits, nothing else."""
    app = create_app({"REDIS_URL": redis_url, "SECRET_KEY": "s", "SWEEP_INTERVAL": 0,
                      "DATA_DIR": str(tmp_path), "REDIS_PREFIX": "pfx", "TESTING": True,
                      "ADMIN_TOKEN": "the-right-admin-token"})  # fmt: skip
    client = app.test_client()
    wrong = client.get("/api/admin/rooms", headers={"Authorization": "Bearer wrong"})
    assert wrong.status_code == 401
    written = r.keys("*")
    assert written and all(k.startswith("pfx:") for k in written), written
    assert any(k.startswith("pfx:limits") for k in written)
    app.extensions["services"].stop()
