"""The check-in windows through the JSON API (issue 26): far back in a long line a
client is told to poll rarely, near the head as before, and a client that polls within
``poll_after`` keeps its place however long it waits."""

from __future__ import annotations


def test_far_back_polls_rarely_and_keeps_its_place(app, client, make_room, clock):
    """After the sweep hints the pace, the back of a line of 300 polls every 270 s at
    most (its window less 30 s), the head within 15 s; polling on time keeps both
    places."""
    make_room(capacity=1, dropout_seconds=30, typical_stay_seconds=60)
    tokens = [client.post("/api/rooms/lobby/join").get_json()["token"] for _ in range(300)]
    app.extensions["services"].visits.sweep("lobby")  # the background sweep's turn
    head, back = (client.get(f"/api/rooms/lobby/position/{t}") for t in (tokens[1], tokens[-1]))
    assert float(head.headers["X-Poll-After-Seconds"]) <= 15
    far = back.get_json()["poll_after"]
    assert 15 < far <= 270 and back.headers["X-Poll-After-Seconds"] == str(far)
    clock.advance(far)
    assert client.get(f"/api/rooms/lobby/position/{tokens[-1]}").status_code == 200
    clock.advance(31)  # the head's window is dropout_seconds: it did not poll, it is gone
    assert client.get(f"/api/rooms/lobby/position/{tokens[1]}").status_code == 410
