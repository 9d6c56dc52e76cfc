"""The check-in's `basis`: what the wait rests on (typical stay, measured, or nothing)."""

from __future__ import annotations


def test_first_in_line_gets_a_typical_wait(client, make_room):
    """With typical_stay_seconds, the first in line gets a wait and basis "typical"."""
    make_room("early", capacity=1, typical_stay_seconds=90)
    client.post("/api/rooms/early/join")
    reply = client.post("/api/rooms/early/join").get_json()
    assert reply["position"] == 1
    assert reply["basis"] == "typical"
    assert reply["wait"] == 90.0
    again = client.get(f"/api/rooms/early/position/{reply['token']}").get_json()
    assert again["basis"] == "typical" and again["wait"] is not None


def test_no_typical_stay_no_wait_no_basis(client, make_room):
    """Nothing measured and the typical stay emptied: wait and basis are both null."""
    make_room("plain", capacity=1, typical_stay_seconds=None)
    client.post("/api/rooms/plain/join")
    reply = client.post("/api/rooms/plain/join").get_json()
    assert reply["wait"] is None
    assert reply["basis"] is None


def test_seated_reply_has_a_basis_field(client, make_room):
    """An admitted reply carries the field too, null: there is no wait to estimate."""
    make_room("seat", capacity=1, typical_stay_seconds=90)
    reply = client.post("/api/rooms/seat/join").get_json()
    assert reply["status"] == "admitted"
    assert reply["basis"] is None
