"""The lean join (issue 32, webapp/views/api/lean.py): a live room's join through the JSON
API whose body has a name at most is answered without Flask, and its replies are the
ones Flask gives. A join changes the room, so each case runs in two rooms set up alike:
one joined by the middleware, the other through Flask's view (the same body with an
empty email, which the middleware leaves to Flask), and the two replies compared but
for what is drawn at random (tokens, support codes, passes, puzzles)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.api.conftest import ADMIN, api_app, flask_requests

DRAWN = ("token", "support_code", "pass", "challenge", "shown")  # random, or from the clock


def twin_rooms(client: Any, **settings: Any) -> tuple[str, str]:
    for name in ("lean", "view"):
        reply = client.put(f"/api/admin/rooms/{name}", json=settings, headers=ADMIN)
        assert reply.status_code in (200, 201), reply.get_json()
    return "lean", "view"


def both(
    client: Any, flask_saw: list[str], body: dict[str, Any] | None = None, **headers: str
) -> tuple[Any, Any]:
    """The join of room "lean" by the middleware and of room "view" by Flask's view."""
    flask_saw.clear()
    lean = client.post("/api/rooms/lean/join", json=body, headers=headers)
    assert flask_saw == [], "the lean join went through Flask"
    view = client.post("/api/rooms/view/join", json={**(body or {}), "email": ""},
                       headers=headers)  # fmt: skip
    assert flask_saw == ["POST /api/rooms/view/join"]
    return lean, view


def alike(lean: Any, view: Any) -> None:
    assert lean.status_code == view.status_code, (lean.get_json(), view.get_json())
    assert lean.is_json and view.is_json
    drop = {"Date", "Content-Length", "Set-Cookie"}
    assert {k: v for k, v in lean.headers.items() if k not in drop} == {
        k: v for k, v in view.headers.items() if k not in drop
    }

    def plain(body: Any, name: str = "", named: str = "") -> Any:
        if isinstance(body, str):
            return body.replace(f"'{name}'", f"'{named}'") if name else body
        if not isinstance(body, dict):
            return body
        return {k: (k in DRAWN and v is not None) or plain(v, name, named)
                for k, v in body.items()}  # fmt: skip

    # a refusal names its room: the twins' names aside, the words are the same
    assert plain(lean.get_json()) == plain(view.get_json(), "view", "lean")


CASES: dict[str, tuple[dict[str, Any], Callable[[Any, Any], None] | None]] = {
    "admitted": ({"capacity": 2}, None),
    "waiting": ({"capacity": 1}, lambda client, room: client.post(f"/api/rooms/{room}/join")),
    "paused": ({"capacity": 1, "status": "paused"}, None),
    "closed": ({"capacity": 1, "status": "closed"}, None),
    "puzzle": ({"capacity": 1, "challenge": "on"}, None),
    "identity": (
        {
            "capacity": 1,
            "identity": "required",
            "identity_secret": "s" * 32,
            "site_url": "https://shop.example/",
        },
        None,
    ),
    "reject": (
        {"capacity": 1, "queueing_method": "reject"},
        lambda client, room: client.post(f"/api/rooms/{room}/join"),
    ),
    "too long a wait": (
        {"capacity": 1, "max_wait_seconds": 60, "typical_stay_seconds": 600},
        lambda client, room: client.post(f"/api/rooms/{room}/join"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_join_is_answered_without_flask_as_flask_answers_it(
    client: Any, flask_saw: list[str], case: str
) -> None:
    settings, before = CASES[case]
    twin_rooms(client, **settings)
    if before is not None:
        for room in ("lean", "view"):
            before(client, room)
    lean, view = both(client, flask_saw, {"name": "Ann"})
    alike(lean, view)


@pytest.mark.parametrize(
    "body", [None, {}, {"name": ""}, {"name": "  Bo  "}, {"name": "x" * 300}, {"name": 5},
             {"name": None}, {"name": "<b>é</b>"}],
)  # fmt: skip
def test_names_are_read_as_flask_reads_them(client: Any, flask_saw: list[str], body: Any) -> None:
    twin_rooms(client, capacity=5)
    alike(*both(client, flask_saw, body))


@pytest.mark.parametrize("key", ["retry-1", "x" * 129, "bad\tkey", "\u00e9t\u00e9"])
def test_the_idempotency_key_is_read_as_flask_reads_it(
    client: Any, flask_saw: list[str], key: str
) -> None:
    """A key sent twice is the same place (a re-join); a bad one is the same 400."""
    twin_rooms(client, capacity=1)
    first = both(client, flask_saw, {"name": "Ann"}, **{"Idempotency-Key": key})
    alike(*first)
    again = both(client, flask_saw, {"name": "Ann"}, **{"Idempotency-Key": key})
    alike(*again)
    if first[0].status_code == 200:
        assert again[0].get_json()["token"] == first[0].get_json()["token"]


def test_a_drop_not_open_and_sold_out(client: Any, flask_saw: list[str], clock: Any) -> None:
    now = int(clock())
    twin_rooms(client, capacity=5, prequeue_at=now + 600, starts_at=now + 1200)
    lean, view = both(client, flask_saw)
    alike(lean, view)
    assert lean.status_code == 409 and lean.get_json()["error"] == "not_open_yet"
    for room in ("lean", "view"):
        changes = {"prequeue_at": None, "starts_at": None, "stock": 0}
        client.put(f"/api/admin/rooms/{room}", json=changes, headers=ADMIN)
    lean, view = both(client, flask_saw)
    alike(lean, view)
    assert lean.status_code == 410


def test_the_join_limit_is_the_same_429(redis_url, r, clock, tmp_path) -> None:
    """Past the per-address limit: 429 with Retry-After, by the middleware and by Flask
    (each room counts its own joins)."""
    app = api_app(redis_url, clock, tmp_path, JOIN_LIMIT="1 per minute")
    seen = flask_requests(app)
    client = app.test_client()
    twin_rooms(client, capacity=5)
    alike(*both(client, seen))
    lean, view = both(client, seen)
    alike(lean, view)
    assert lean.status_code == 429 and int(lean.headers["Retry-After"]) > 0


@pytest.mark.parametrize(
    ("data", "content_type"),
    [(b'{"name": "Ann", "email": "ann@example.org"}', "application/json"),
     (b'{"name": "Ann"}', "text/plain"), (b"[1]", "application/json"),
     (b"{", "application/json"), (b'{"name": "\\ud800"}', "application/json"),
     (b'{"name": "' + b"x" * 2000 + b'"}', "application/json")],
)  # fmt: skip
def test_other_bodies_go_on_to_flask(
    client: Any, make_room: Any, flask_saw: list[str], data: bytes, content_type: str
) -> None:
    """An email, a body that is not JSON, not an object or larger than a name needs:
    Flask reads it (and answers it as before)."""
    make_room("lean", capacity=5)
    flask_saw.clear()
    reply = client.post("/api/rooms/lean/join", data=data, content_type=content_type)
    assert flask_saw == ["POST /api/rooms/lean/join"]
    assert reply.is_json and reply.status_code in (200, 400)


def test_a_waitlist_join_goes_on_to_flask(
    client: Any, make_room: Any, flask_saw: list[str]
) -> None:
    make_room("list", kind="waitlist", capacity=10)
    flask_saw.clear()
    reply = client.post("/api/rooms/list/join", json={})
    assert flask_saw == ["POST /api/rooms/list/join"] and reply.status_code == 400


def test_joins_are_timed_under_their_endpoint(client: Any, make_room: Any) -> None:
    make_room("lean", capacity=1)
    for _ in range(3):
        client.post("/api/rooms/lean/join")
    client.post("/api/rooms/lean/join", headers={"Idempotency-Key": "x" * 200})
    text = client.get("/metrics", headers=ADMIN).get_data(as_text=True)
    counts = {
        status: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("waitingroom_http_request_duration_seconds_count")
        and 'endpoint="api.join"' in line
        for status in ("2xx", "4xx")
        if f'status="{status}"' in line
    }
    assert counts == {"2xx": 3.0, "4xx": 1.0}
