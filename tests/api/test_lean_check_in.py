"""The lean check-in (issue 26, webapp/views/api/lean.py): a live room's check-in through the
JSON API is answered without Flask, and its replies are the ones Flask gives. Flask
still answers HEAD (werkzeug derives it from the GET route), so each GET is compared
with a HEAD of the same URL, and the view itself with the middleware's body."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from webapp.views.api import routes as api

ADMIN = {"Authorization": "Bearer test-admin-token"}


def compared(response: Any) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k not in ("Date",)}


def test_a_check_in_is_answered_without_flask_as_flask_answers_it(
    app: Flask, client: Any, make_room: Any, flask_saw: list[str]
) -> None:
    make_room("lean", capacity=1)
    seated = client.post("/api/rooms/lean/join").get_json()["token"]
    waiting = client.post("/api/rooms/lean/join").get_json()["token"]
    for token, status in ((waiting, "waiting"), (seated, "admitted")):
        path = f"/api/rooms/lean/position/{token}"
        flask_saw.clear()
        lean = client.get(path)
        assert flask_saw == [], "the check-in went through Flask"
        assert lean.status_code == 200 and lean.get_json()["status"] == status
        head = client.head(path)
        assert flask_saw == [f"HEAD {path}"]
        assert compared(lean) == compared(head)  # security headers, poll hint, length
        with app.test_request_context(path):
            view, code, headers = api.position("lean", token)
        assert (code, headers) == (
            200,
            {"X-Poll-After-Seconds": lean.headers["X-Poll-After-Seconds"]},
        )
        assert lean.get_json() == view.get_json()  # the clock stands still: one reply


def test_shown_is_read_as_flask_reads_it(app: Flask, client: Any, make_room: Any) -> None:
    """The previous reply's ``shown`` smooths the next estimate (the first of several,
    percent-decoded); junk is ignored. The middleware's reply is the view's, each time."""
    make_room("lean", capacity=1)
    client.post("/api/rooms/lean/join")
    first = client.post("/api/rooms/lean/join").get_json()
    token = first["token"]
    wait, variance, at, rate = first["shown"].split(",")
    other = f"{float(wait) / 2},{variance},{at},{rate}"
    queries = [f"x=1&shown={other}&shown=junk", f"shown={other.replace(',', '%2C')}",
               "shown=", "shown=%FF%FE", "shown=1,2", "shown", ""]  # fmt: skip
    replies = []
    for query in queries:
        path = f"/api/rooms/lean/position/{token}?{query}"
        lean = client.get(path).get_json()
        with app.test_request_context(path):
            view = api.position("lean", token)[0].get_json()
        assert lean == view, query
        replies.append(lean["shown"])
    assert replies[0] == replies[1] != first["shown"]  # read, and smoothed from it
    assert replies[2:] == [first["shown"]] * 5  # ignored


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/api/rooms/lean/position/no-such-token", 404, "no such ticket in this room"),
        ("/api/rooms/nowhere/position/abc", 404, "no room named 'nowhere'"),
        ("/api/rooms/Bad%20Name/position/abc", 404, None),
        ("/api/rooms/lean/position/abc/", 404, None),
        ("/api/rooms/lean/position/" + "x" * 5000, 404, None),
        ("/api/rooms/lean/position/%C3%A9", 404, None),
    ],
)
def test_refusals_are_flasks(
    client: Any, make_room: Any, path: str, status: int, error: str | None
) -> None:
    """Whoever answers a bad check-in, it is the same JSON refusal with the same headers."""
    make_room("lean", capacity=1)
    lean, head = client.get(path), client.head(path)
    assert lean.status_code == head.status_code == status
    assert lean.is_json and lean.get_json()["error"]
    if error is not None:
        assert lean.get_json()["error"] == error
    assert compared(lean) == compared(head)


def test_a_ticket_gone_is_410_as_before(client: Any, make_room: Any) -> None:
    make_room("lean", capacity=1)
    client.post("/api/rooms/lean/join")
    token = client.post("/api/rooms/lean/join").get_json()["token"]
    assert client.post(f"/api/rooms/lean/leave/{token}").status_code == 200
    lean = client.get(f"/api/rooms/lean/position/{token}")
    assert lean.status_code == 410 and lean.get_json()["error"]
    assert compared(lean) == compared(client.head(f"/api/rooms/lean/position/{token}"))


def test_a_waitlist_entry_goes_on_to_flask(
    client: Any, make_room: Any, flask_saw: list[str]
) -> None:
    """A waitlist's entries are signed tokens: api.position answers them."""
    make_room("list", kind="waitlist", capacity=10)
    token = client.post("/api/rooms/list/join", json={"email": "a@example.org"}).get_json()["token"]
    flask_saw.clear()
    reply = client.get(f"/api/rooms/list/position/{token}")
    assert reply.status_code == 200 and "referral_code" in reply.get_json()
    assert flask_saw == [f"GET /api/rooms/list/position/{token}"]


def test_a_redis_outage_is_the_same_503(tmp_path: Any) -> None:
    """Redis unreachable: the room's settings cannot be read, so Flask answers (503)."""
    from webapp import create_app

    app = create_app(
        {"REDIS_URL": "redis://127.0.0.1:9/0", "SECRET_KEY": "x", "SWEEP_INTERVAL": 0,
         "CHAT_UPKEEP_SECONDS": 0, "DATA_DIR": str(tmp_path)}
    )  # fmt: skip
    reply = app.test_client().get("/api/rooms/lean/position/abc")
    assert reply.status_code == 503 and reply.is_json
    assert reply.headers["Retry-After"] == "5"


def test_a_redis_failure_during_the_check_in_is_a_503(
    client: Any, make_room: Any, r: Any, flask_saw: list[str]
) -> None:
    """The settings cached, Redis refusing the check-in itself: the lean path's 503."""
    make_room("lean", capacity=1)
    token = client.post("/api/rooms/lean/join").get_json()["token"]
    assert client.get(f"/api/rooms/lean/position/{token}").status_code == 200
    r.config_set("maxmemory", "1")
    r.config_set("maxmemory-policy", "noeviction")
    try:
        flask_saw.clear()
        reply = client.get(f"/api/rooms/lean/position/{token}")
    finally:
        r.config_set("maxmemory", "0")
    assert flask_saw == []
    assert reply.status_code == 503 and reply.get_json()["error"].startswith("the waiting room")
    assert reply.headers["Retry-After"] == "5"


def test_check_ins_are_timed_under_their_endpoint(app: Flask, client: Any, make_room: Any) -> None:
    make_room("lean", capacity=1)
    token = client.post("/api/rooms/lean/join").get_json()["token"]
    for _ in range(3):
        client.get(f"/api/rooms/lean/position/{token}")
    client.get("/api/rooms/lean/position/nope")
    text = client.get("/metrics", headers=ADMIN).get_data(as_text=True)
    counts = {
        status: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("waitingroom_http_request_duration_seconds_count")
        and 'endpoint="api.position"' in line
        for status in ("2xx", "4xx")
        if f'status="{status}"' in line
    }
    assert counts == {"2xx": 3.0, "4xx": 1.0}
