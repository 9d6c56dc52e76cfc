"""The JSON API contract of docs/api.md: every status code, and hostile input."""

from __future__ import annotations

import pytest


def join(client, room="lobby", **kwargs):
    return client.post(f"/api/rooms/{room}/join", **kwargs)


def test_admin_creates_updates_and_deletes_room(admin, client):
    """PUT creates (201) then updates (200) a room; DELETE removes it."""
    created = client.put("/api/admin/rooms/gig", json={"capacity": 3}, headers=admin)
    assert created.status_code == 201
    assert created.get_json()["capacity"] == 3
    updated = client.put("/api/admin/rooms/gig", json={"status": "paused"}, headers=admin)
    assert updated.status_code == 200
    assert updated.get_json() | {} == created.get_json() | {"status": "paused"}
    assert client.get("/api/admin/rooms/gig", headers=admin).get_json()["status"] == "paused"
    assert client.delete("/api/admin/rooms/gig", headers=admin).status_code == 200
    assert client.delete("/api/admin/rooms/gig", headers=admin).status_code == 404
    assert client.get("/api/rooms").get_json() == []


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dGVzdA=="},
     {"Authorization": "Bearer"}, {"Authorization": "Bearer test-admin-token-and-more"}],
)  # fmt: skip
def test_admin_needs_the_token(client, headers):
    """A wrong or missing admin token gets 401 and creates nothing."""
    response = client.put("/api/admin/rooms/gig", json={"capacity": 3}, headers=headers)
    assert response.status_code == 401
    assert "error" in response.get_json()
    assert client.get("/api/rooms").get_json() == []


def test_no_admin_when_token_unset(app, admin, client):
    """With WEBAPP_ADMIN_TOKEN unset there is no admin access at all."""
    app.config["ADMIN_TOKEN"] = None
    response = client.put("/api/admin/rooms/gig", json={"capacity": 3}, headers=admin)
    assert response.status_code == 401


@pytest.mark.parametrize(
    "body",
    [{"capacity": 0}, {"capacity": -1}, {"capacity": "5"}, {"capacity": 2.5},
     {"capacity": True}, {"capacity": None}, {"status": "shut"}, {"bogus": 1},
     {"capacity": 10**30}, [], "text", 5, None],
)  # fmt: skip
def test_bad_settings_are_refused(admin, client, make_room, body):
    """Malformed settings get 400 with a message and change nothing."""
    make_room("gig", capacity=2)
    response = client.put("/api/admin/rooms/gig", json=body, headers=admin)
    assert response.status_code == 400
    assert response.get_json()["error"]
    assert client.get("/api/admin/rooms/gig", headers=admin).get_json()["capacity"] == 2


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [("title", "Gig", "live"), ("description", "Doors at eight", "live"),
     ("site_url", "https://shop.example/", "live"),
     ("claim_redirect_url", "https://shop.example/in", "waitlist")],
)  # fmt: skip
def test_a_text_setting_is_never_null(admin, client, make_room, name, value, kind):
    """A text setting is a string, "" for none, as the OpenAPI document says: null gets
    400 naming the setting, and the room keeps its value."""
    make_room("gig", kind=kind, **{name: value})
    response = client.put("/api/admin/rooms/gig", json={name: None}, headers=admin)
    assert response.status_code == 400
    assert response.is_json and name in response.get_json()["error"]
    assert client.get("/api/admin/rooms/gig", headers=admin).get_json()[name] == value
    emptied = client.put("/api/admin/rooms/gig", json={name: ""}, headers=admin)
    assert emptied.status_code == 200 and emptied.get_json()[name] == ""


@pytest.mark.parametrize("name", ["UPPER", "a_b", "a" * 65, "sp ace", "é", "a.b"])
def test_bad_room_names(admin, client, name):
    """Room names are [a-z0-9-]{1,64}: anything else is refused or not found."""
    response = client.put(f"/api/admin/rooms/{name}", json={"capacity": 1}, headers=admin)
    assert response.status_code == 400
    assert join(client, name).status_code == 404


def test_join_admitted_then_waiting(client, make_room):
    """The first joiner is admitted; the next waits at position 1, with poll_after."""
    make_room(capacity=1, typical_stay_seconds=None)
    first = join(client, json={"name": "Ada"})
    assert first.status_code == 200
    body = first.get_json()
    assert (body["status"], body["position"], body["ahead"]) == ("admitted", 0, 0)
    second = join(client).get_json()
    assert (second["status"], second["position"], second["ahead"]) == ("waiting", 1, 0)
    assert {"token", "wait", "variance", "poll_after"} <= set(second)
    assert second["wait"] is None  # nothing observed yet: honest "unknown"


def test_poll_after_header_and_bounds(client, make_room):
    """poll_after is also a header, and always leaves room before dropout_seconds."""
    make_room(capacity=1, dropout_seconds=10)
    join(client)
    for _ in range(8):
        response = join(client)
        poll = float(response.headers["X-Poll-After-Seconds"])
        assert poll == response.get_json()["poll_after"]
        assert 0 < poll <= 5


def test_position_is_a_checkin(client, make_room, clock):
    """Checking in keeps the place; missing check-ins loses it (410)."""
    make_room(capacity=1, dropout_seconds=10)
    join(client)
    token = join(client).get_json()["token"]
    for _ in range(5):
        clock.advance(8)
        response = client.get(f"/api/rooms/lobby/position/{token}")
        assert response.status_code == 200
        assert response.get_json()["position"] == 1
    clock.advance(11)
    gone = client.get(f"/api/rooms/lobby/position/{token}")
    assert gone.status_code == 410
    assert "dropped out" in gone.get_json()["error"]


def test_leave_lets_the_next_in(client, make_room):
    """Leaving frees the seat for the head of the line; leaving again is fine."""
    make_room(capacity=1)
    a = join(client).get_json()["token"]
    b = join(client).get_json()["token"]
    assert client.post(f"/api/rooms/lobby/leave/{a}").status_code == 200
    assert client.post(f"/api/rooms/lobby/leave/{a}").status_code == 200
    assert client.get(f"/api/rooms/lobby/position/{b}").get_json()["status"] == "admitted"
    assert client.get(f"/api/rooms/lobby/position/{a}").status_code == 410


def test_idempotency_key_gives_one_place(client, make_room):
    """The same Idempotency-Key joins once; a different key gets its own place."""
    make_room(capacity=1)
    join(client)
    one = join(client, headers={"Idempotency-Key": "k-1"}).get_json()
    again = join(client, headers={"Idempotency-Key": "k-1"}).get_json()
    other = join(client, headers={"Idempotency-Key": "k-2"}).get_json()
    assert one["token"] == again["token"]
    assert other["position"] == 2


def test_rooms_list_and_qsize(client, make_room):
    """GET /api/rooms and qsize report seats, line and status."""
    make_room(capacity=1)
    for _ in range(3):
        join(client)
    assert client.get("/api/rooms").get_json() == [
        {"name": "lobby", "capacity": 1, "active": 1, "waiting": 2, "status": "open",
         "notice": None}
    ]  # fmt: skip
    assert client.get("/api/rooms/lobby/qsize").get_json() == {
        "len": 2, "active": 1, "capacity": 1,
    }  # fmt: skip


def test_unknown_room_and_token(client, make_room):
    """Unknown room or token: 404 with a JSON error."""
    make_room()
    for response in (
        join(client, "nowhere"),
        client.get("/api/rooms/nowhere/qsize"),
        client.get("/api/rooms/lobby/position/not-a-token"),
        client.post("/api/rooms/lobby/leave/not-a-token"),
        client.get("/api/rooms/nowhere/position/x"),
    ):
        assert response.status_code == 404
        assert response.get_json()["error"]


def test_closed_room_refuses_join(client, make_room):
    """A closed room answers 409 to a join."""
    make_room(status="closed")
    response = join(client)
    assert response.status_code == 409
    assert "closed" in response.get_json()["error"]


def test_admission_control_503(client, make_room, r):
    """A full line refuses a join with 503 and Retry-After, changing nothing."""
    make_room(capacity=1, max_line_length=1)
    join(client)
    join(client)
    response = join(client)
    assert response.status_code == 503
    assert int(response.headers["Retry-After"]) > 0
    assert client.get("/api/rooms/lobby/qsize").get_json()["len"] == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"data": "not json", "content_type": "application/json"},
        {"data": "[1, 2]", "content_type": "application/json"},
        {"data": '"name"', "content_type": "application/json"},
        {"json": {"name": 5}},
        {"json": {"name": ["a"]}},
        {"json": {"name": "x" * 41}},
        {"data": b"\xff\xfe\x00", "content_type": "application/json"},
        {"json": {"name": "ok"}, "headers": {"Idempotency-Key": "k" * 129}},
        {"json": {"name": "ok"}, "headers": {"Idempotency-Key": "a\tb"}},
    ],
)
def test_hostile_join_bodies(client, make_room, kwargs):
    """Malformed join input gets 400 and nobody joins."""
    make_room()
    response = join(client, **kwargs)
    assert response.status_code == 400
    assert response.get_json()["error"]
    assert client.get("/api/rooms/lobby/qsize").get_json()["active"] == 0


def test_oversized_body(client, make_room):
    """A body over the size limit gets 413 JSON."""
    make_room()
    response = join(client, json={"name": "x" * 100_000})
    assert response.status_code == 413
    assert response.get_json()["error"]


@pytest.mark.parametrize(
    "name", ["Zoë 🎉", "<script>alert(1)</script>", "\u202eevil", "a\u0000b", "  spaced   out  "]
)
def test_odd_unicode_names_are_kept_safe(client, make_room, name):
    """Odd unicode in a display name is accepted after cleaning, never a 500."""
    make_room()
    response = join(client, json={"name": name})
    assert response.status_code == 200


def test_unknown_paths_and_methods_are_json(client):
    """Every answer under /api/ is JSON, unknown paths and wrong methods included."""
    for response in (
        client.get("/api/nope"),
        client.delete("/api/rooms"),
        client.get("/api/rooms/lobby/join"),
        client.put("/api/rooms/lobby/join"),
    ):
        assert response.status_code in (404, 405)
        assert response.is_json
        assert response.get_json()["error"]


@pytest.fixture
def down_client(tmp_path):
    """A client of an app whose Redis is unreachable."""
    from webapp import create_app

    app = create_app(
        {"REDIS_URL": "redis://127.0.0.1:9/0", "SECRET_KEY": "x", "SWEEP_INTERVAL": 0,
         "CHAT_UPKEEP_SECONDS": 0, "DATA_DIR": str(tmp_path)}
    )  # fmt: skip
    return app.test_client()


def test_redis_outage_is_a_503_not_a_500(down_client):
    """With Redis unreachable the API answers 503 JSON with Retry-After."""
    response = down_client.post("/api/rooms/lobby/join")
    assert response.status_code == 503
    assert response.is_json and response.headers["Retry-After"] == "5"


def test_redis_outage_page_for_browsers(down_client):
    """A browser gets a friendly 503 page, not a stack trace, when Redis is down."""
    response = down_client.get("/")
    assert response.status_code == 503
    assert b"We will be right back" in response.data


def seat_history(client, clock, holds=8, seconds=10):
    """Seats held `seconds` each, one after another, so the room has statistics."""
    for _ in range(holds):
        token = join(client).get_json()["token"]
        clock.advance(seconds)
        client.post(f"/api/rooms/lobby/leave/{token}")


def test_wait_is_estimated_with_a_range(client, make_room, clock):
    """With history, a waiter gets a wait, its variance and a range around it."""
    make_room(capacity=1, dropout_seconds=60)
    seat_history(client, clock)
    join(client)
    body = join(client).get_json()
    assert body["wait"] > 0 and body["variance"] >= 0
    low, high = body["range"]
    assert low <= body["wait"] <= high
    assert body["shown"]


def test_shown_figure_moves_smoothly(client, make_room, clock):
    """Handing back the last shown figure keeps the new one from jumping to the raw one."""
    make_room(capacity=1, dropout_seconds=60)
    seat_history(client, clock)
    join(client)
    token = join(client).get_json()["token"]
    clock.advance(1)
    raw = client.get(f"/api/rooms/lobby/position/{token}").get_json()["wait"]
    earlier = f"{raw + 300:.1f},100.0,{clock.now - 1:.1f}"
    smoothed = client.get(f"/api/rooms/lobby/position/{token}?shown={earlier}").get_json()
    assert raw < smoothed["wait"] < raw + 299
    garbage = client.get(f"/api/rooms/lobby/position/{token}?shown=nan,x,1").get_json()
    assert garbage["wait"] == raw
