"""Waitlist rooms through the JSON API (issue 13, phase 2b): join with an email and a
referral code, read the entry back, the refusals; live rooms answer as before."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema_rs
import pytest

from webapp.web.links import entry_of

DOCUMENT = json.loads(resources.files("webapp").joinpath("openapi.json").read_text())
STANDING = {"$ref": "#/components/schemas/Standing", "components": DOCUMENT["components"]}
LIVE_KEYS = {"token", "status", "position", "ahead", "wait", "variance", "range", "shown",
             "poll_after", "waiting", "active", "capacity", "room_status", "support_code",
             "notice", "trend", "basis", "queueing_method", "seat_chance"}  # fmt: skip
WAITLIST_KEYS = {"confirmed", "referral_code", "score", "referrals"}


@pytest.fixture
def waitlist(make_room):
    return make_room("list", kind="waitlist", ordering="priority", capacity=10)


@pytest.fixture
def waitlists(app):
    return app.extensions["services"].waitlists


def join(client, room, address="192.0.2.1", **body):
    """A join from ``address`` (friends on one network have their boosts held)."""
    return client.post(f"/api/rooms/{room}/join", json=body, environ_base={"REMOTE_ADDR": address})


def entry_id(client, room, token):
    """The entry id a join's token names."""
    with client.application.app_context():
        found = entry_of(room, token)
    assert found is not None
    return found


def conforms(reply):
    jsonschema_rs.Draft202012Validator(STANDING).validate(reply)


def test_join_replies_with_the_entry(client, waitlist):
    """A join gives the live reply's fields plus confirmed, the referral code, the score
    and the referrals, and a document-conforming body."""
    reply = join(client, waitlist, name="Ann", email="ann@example.org")
    assert reply.status_code == 200
    body = reply.get_json()
    conforms(body)
    assert set(body) == LIVE_KEYS | WAITLIST_KEYS
    assert body["confirmed"] is False
    assert body["score"] == 0 and len(body["referral_code"]) == 8
    assert body["referrals"] == {"credited": 0, "held": 0, "pending": 0}
    assert body["position"] == 1 and body["wait"] is None
    assert reply.headers["X-Poll-After-Seconds"] == "300.0"


def test_the_same_mailbox_gets_no_entry_back(client, waitlist, r, app):
    """Joining again with the same address (other case) answers 202 without the entry's
    token or figures: its owner is mailed the entry's link (issue 25, hole 3)."""
    first = join(client, waitlist, email="Ann@Example.org").get_json()
    again = join(client, waitlist, email="ann@example.org")
    assert again.status_code == 202
    body = again.get_json()
    assert body["token"] is None and body["status"] == "known"
    assert first["token"] not in again.get_data(as_text=True)
    assert first["referral_code"] not in again.get_data(as_text=True)
    outbox = app.extensions["services"].rooms.keys.waitlist(waitlist).outbox
    kinds = [f["kind"] for _, f in r.xrange(outbox)]
    assert kinds == ["confirm", "link"]


def test_position_reads_the_entry(client, waitlist, waitlists):
    """position/<token> answers the entry as the join did; confirmation shows there."""
    token = join(client, waitlist, name="Ann", email="ann@example.org").get_json()["token"]
    reply = client.get(f"/api/rooms/{waitlist}/position/{token}")
    assert reply.status_code == 200
    conforms(reply.get_json())
    waitlists.confirm(waitlist, entry_id(client, waitlist, token))
    assert client.get(f"/api/rooms/{waitlist}/position/{token}").get_json()["confirmed"] is True


def test_position_says_admitted_then_lapsed(client, waitlist, waitlists, app, clock):
    """An admitted entry not claimed within claim_seconds reads lapsed after the sweep."""
    rooms = app.extensions["services"].rooms
    rooms.configure(waitlist, {"claim_seconds": 60})
    token = join(client, waitlist, name="Ann", email="ann@example.org").get_json()["token"]
    waitlists.confirm(waitlist, entry_id(client, waitlist, token))
    rooms.admit(waitlist, 1)
    path = f"/api/rooms/{waitlist}/position/{token}"
    assert client.get(path).get_json()["status"] == "admitted"
    clock.advance(60)
    waitlists.sweep(waitlist)
    body = client.get(path).get_json()
    conforms(body)
    assert (body["status"], body["position"]) == ("lapsed", 0)


def test_referrals_count_on_the_referrer(client, waitlist, waitlists):
    """A friend who joins with the code is pending, then credited once confirmed."""
    ann = join(client, waitlist, email="ann@example.org").get_json()
    bob = join(client, waitlist, "198.51.100.7", email="bob@example.org",
               ref=ann["referral_code"]).get_json()  # fmt: skip
    path = f"/api/rooms/{waitlist}/position/{ann['token']}"
    assert client.get(path).get_json()["referrals"]["pending"] == 1
    waitlists.confirm(waitlist, entry_id(client, waitlist, bob["token"]))
    body = client.get(path).get_json()
    assert body["referrals"] == {"credited": 1, "held": 0, "pending": 0}
    assert body["score"] == 100


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "email"),
        ({"email": "not an address"}, "not valid"),
        ({"email": "x@mailinator.com"}, "lasting email"),
        ({"email": 5}, "email must be text"),
        ({"email": "a@example.org", "ref": ["x"]}, "ref must be text"),
    ],
)
def test_bad_emails_are_refused(client, waitlist, body, words):
    """A missing, malformed or disposable email is a 400 saying why; nobody joined."""
    reply = join(client, waitlist, **body)
    assert reply.status_code == 400
    assert words in reply.get_json()["error"]
    assert client.get(f"/api/rooms/{waitlist}/qsize").get_json()["len"] == 0


def test_forged_and_foreign_tokens_are_not_found(client, waitlist, make_room, waitlists):
    """A raw entry id, a tampered token or another room's token is a 404."""
    make_room("other", kind="waitlist")
    token = join(client, waitlist, email="ann@example.org").get_json()["token"]
    other = join(client, "other", email="ann@example.org").get_json()["token"]
    entry = entry_id(client, waitlist, token)
    for wrong in (entry, token[:-2] + "xx", other):
        assert client.get(f"/api/rooms/{waitlist}/position/{wrong}").status_code == 404


def test_a_closed_waitlist_refuses_joins(client, make_room):
    """A closed waitlist answers 409, as a closed live room does."""
    make_room("shut", kind="waitlist", status="closed")
    assert join(client, "shut", email="ann@example.org").status_code == 409


def test_a_live_room_answers_as_before(client, make_room):
    """A live room ignores email and ref: its reply has exactly the live fields."""
    make_room("hall", capacity=1)
    for body in ({"name": "Ann"}, {"name": "Bob", "email": "bob@example.org", "ref": "X"}):
        reply = join(client, "hall", **body)
        assert reply.status_code == 200
        assert set(reply.get_json()) == LIVE_KEYS
        token = reply.get_json()["token"]
        position = client.get(f"/api/rooms/hall/position/{token}").get_json()
        assert set(position) == LIVE_KEYS


def test_a_live_room_still_checks_the_fields_types(client, make_room):
    """An email or ref of the wrong type is a 400 in a live room too."""
    make_room("hall", capacity=1)
    assert join(client, "hall", email=3).status_code == 400
    assert join(client, "hall", ref="x" * 33).status_code == 400
