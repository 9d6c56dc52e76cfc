"""A scheduled drop through the JSON API (issue 24): the times in ISO 8601, the refusal
before the pre-queue, the pre-queue's replies, the draw's record, "start now", stock
reports and the sell-out's 410."""

from __future__ import annotations

import multiprocessing
from typing import Any

import redis
from building import engine

from tests.api.conftest import ADMIN
from webapp.domain.draw import commitment_of, verify_draw

T0 = 1_700_000_000  # the test clock's start


def schedule(client: Any, room: str = "drop", **more: Any) -> dict[str, Any]:
    body = {"capacity": 2, "prequeue_at": "2023-11-14T22:14:20Z", "starts_at": T0 + 120, **more}
    reply = client.put(f"/api/admin/rooms/{room}", json=body, headers=ADMIN)
    assert reply.status_code == 201, reply.get_json()
    return reply.get_json()


def test_times_are_taken_as_iso_or_unix_and_answered_in_iso(client: Any) -> None:
    """prequeue_at as ISO 8601 and starts_at as Unix seconds both read back in UTC."""
    settings = schedule(client, ends_at="2023-11-15T00:00:00+01:00")
    assert settings["prequeue_at"] == "2023-11-14T22:14:20Z"  # T0 + 60
    assert settings["starts_at"] == "2023-11-14T22:15:20Z"
    assert settings["ends_at"] == "2023-11-14T23:00:00Z"
    bad = client.put("/api/admin/rooms/drop", json={"starts_at": "soon"}, headers=ADMIN)
    assert bad.status_code == 400 and "ISO 8601" in bad.get_json()["error"]


def test_before_the_prequeue_a_join_is_409_not_open_yet(client: Any) -> None:
    """The refusal names both times."""
    schedule(client)
    reply = client.post("/api/rooms/drop/join")
    assert reply.status_code == 409
    assert reply.get_json() == {
        "error": "not_open_yet",
        "prequeue_at": "2023-11-14T22:14:20Z",
        "starts_at": "2023-11-14T22:15:20Z",
    }


def test_prequeue_then_the_start_and_the_draw(client: Any, clock: Any) -> None:
    """Pre-queued joins answer status prequeue with no position, the start time, the
    count and a draw id; after "start now" (twice: the second does nothing) each has a
    place, and the draw recomputed from the revealed seed is the line's order."""
    schedule(client, prequeue_per_address=6)  # six from the test client's one address
    committed = client.get("/api/rooms/drop/draw").get_json()
    assert committed["state"] == "committed" and committed["seed"] == ""
    assert committed["entries"] == 0 and committed["starts_at"] == "2023-11-14T22:15:20Z"
    clock.advance(61)
    joined = [client.post("/api/rooms/drop/join").get_json() for _ in range(6)]
    last = joined[-1]
    assert last["status"] == "prequeue" and last["position"] is None and last["wait"] is None
    assert last["prequeue"] == 6 and last["starts_at"] == "2023-11-14T22:15:20Z"
    assert len(last["draw_id"]) == 12
    started = client.post("/api/admin/rooms/drop/start", headers=ADMIN)
    assert started.get_json() == {"started": True, "entries": 6}
    again = client.post("/api/admin/rooms/drop/start", headers=ADMIN)
    assert again.get_json() == {"started": False, "entries": 0}
    drawn = client.get("/api/rooms/drop/draw").get_json()
    assert drawn["state"] == "drawn" and drawn["entries"] == 6
    assert commitment_of(drawn["seed"]) == committed["commitment"]
    order = verify_draw(drawn["seed"], [j["draw_id"] for j in joined])
    places = {}
    for j in joined:
        now = client.get(f"/api/rooms/drop/position/{j['token']}").get_json()
        places[j["draw_id"]] = 0 if now["status"] == "admitted" else now["position"]
        assert now["draw_id"] == j["draw_id"]
    assert sorted(order, key=lambda i: places[i]) == order
    text = client.get("/rooms/drop/draw.txt").get_data(as_text=True)
    assert text.split() == order
    audit = client.get("/api/admin/rooms/drop/audit", headers=ADMIN).get_json()
    kinds = (
        [entry["kind"] for entry in audit["entries"]]
        if isinstance(audit, dict)
        else [entry["kind"] for entry in audit]
    )
    assert "draw_commit" in kinds and "draw_reveal" in kinds


def test_a_bad_request_id_is_400_and_counts_nothing(client: Any) -> None:
    """A request id that is not text, or too long, is refused before anything counts,
    with "sold" or with "left"."""
    client.put("/api/admin/rooms/shop", json={"capacity": 1, "stock": 3}, headers=ADMIN)
    for bad, body in [
        (bad, {field: 1, "request_id": bad})
        for bad in ([1], {"a": 1}, 7, "x" * 101, "a\x00b")
        for field in ("sold", "left")  # checked whichever is given
    ]:
        reply = client.post("/api/admin/rooms/shop/stock", json=body, headers=ADMIN)
        assert reply.status_code == 400 and "request_id" in str(reply.get_json()), bad
    left = client.post("/api/admin/rooms/shop/stock", json={"sold": 0}, headers=ADMIN)
    assert left.get_json()["stock_left"] == 3


def test_stock_reports_and_the_sell_out(client: Any) -> None:
    """sold counts once per request id; left sets it; at 0 joins get 410 sold_out and
    the waiting end with sold_out; raising it reopens."""
    client.put("/api/admin/rooms/shop", json={"capacity": 1, "stock": 3}, headers=ADMIN)
    seated = client.post("/api/rooms/shop/join").get_json()
    waiting = client.post("/api/rooms/shop/join").get_json()
    assert waiting["stock_left"] == 3 and waiting["likely_sold_out"] is False
    one = {"sold": 2, "request_id": "order-1"}
    assert client.post("/api/admin/rooms/shop/stock", json=one, headers=ADMIN).get_json() == {
        "stock_left": 1, "sold": 2, "replay": False, "sold_out": False,
    }  # fmt: skip
    replay = client.post("/api/admin/rooms/shop/stock", json=one, headers=ADMIN).get_json()
    assert replay["replay"] is True and replay["stock_left"] == 1
    last = client.post("/api/admin/rooms/shop/stock", json={"sold": 1}, headers=ADMIN)
    assert last.get_json()["sold_out"] is True
    assert client.post("/api/rooms/shop/join").status_code == 410
    assert client.post("/api/rooms/shop/join").get_json() == {"error": "sold_out"}
    listed = {room["name"]: room for room in client.get("/api/rooms").get_json()}
    assert listed["shop"]["status"] == "sold_out"
    gone = client.get(f"/api/rooms/shop/position/{waiting['token']}")
    assert gone.status_code == 410 and "sold out" in gone.get_json()["error"]
    still = client.get(f"/api/rooms/shop/position/{seated['token']}").get_json()
    assert still["status"] == "admitted" and still["room_status"] == "sold_out"
    reopened = client.post("/api/admin/rooms/shop/stock", json={"left": 5}, headers=ADMIN)
    assert reopened.get_json()["sold_out"] is False
    assert client.post("/api/rooms/shop/join").status_code == 200


def test_stock_refuses_bad_input(client: Any) -> None:
    """Neither or both of sold and left, negative numbers, a long request id, a property
    the document does not name: 400 saying what, and the stock is as it was."""
    client.put("/api/admin/rooms/shop", json={"capacity": 1, "stock": 3}, headers=ADMIN)
    for body in ({}, {"sold": 1, "left": 2}, {"sold": -1}, {"left": "x"},
                 {"sold": 1, "request_id": "x" * 200}, {"sold": True},
                 {"sold": 1, "solds": 1}, {"left": 0, "room": "shop"}):  # fmt: skip
        reply = client.post("/api/admin/rooms/shop/stock", json=body, headers=ADMIN)
        assert reply.status_code == 400, body
        assert reply.get_json()["error"], body
    unknown = client.post("/api/admin/rooms/shop/stock", json={"sold": 1, "solds": 1},
                          headers=ADMIN)  # fmt: skip
    assert "solds" in unknown.get_json()["error"]
    assert client.get("/api/admin/rooms/shop", headers=ADMIN).get_json()["stock"] == 3
    assert (
        client.post("/api/admin/rooms/nope/stock", json={"left": 1}, headers=ADMIN).status_code
        == 404
    )
    assert client.post("/api/admin/rooms/shop/stock", json={"left": 1}).status_code == 401


def _sell(args: tuple[str, list[str]]) -> list[bool]:
    """One process's sold reports (a shop's workers), each with its request id."""
    from building import visits_of
    from recording import RecordingPublisher

    url, ids = args
    rooms = engine(redis.Redis.from_url(url, decode_responses=True))
    visits = visits_of(rooms, RecordingPublisher())
    return [visits.record_sold("shop", 1, request_id=i).replay for i in ids]


def test_concurrent_sold_reports_count_once(redis_url: str) -> None:
    """4 processes report the same 100 orders (request ids) at once: 100 counted."""
    rooms = engine(redis.Redis.from_url(redis_url, decode_responses=True))
    rooms.configure("shop", {"capacity": 1, "stock": 1000})
    ids = [f"order-{i}" for i in range(100)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.map(_sell, [(redis_url, ids[k:] + ids[:k]) for k in (0, 25, 50, 75)])
    assert sum(not replay for rows in results for replay in rows) == 100
    settings = rooms.find_settings("shop")
    assert settings is not None and settings.stock == 900


def test_during_the_start_each_sees_the_prequeue_or_its_final_place(
    app: Any, client: Any, clock: Any
) -> None:
    """While the start places the pre-queue a slice at a time (issue 32), a ticket not
    yet placed answers status prequeue (with how many are left in it), a placed one the
    place it keeps; the draw says placing, its seed still secret."""
    schedule(
        client, capacity=1, dropout_seconds=120, prequeue_per_address=6
    )  # no dropouts; one address
    clock.advance(61)
    joined = [client.post("/api/rooms/drop/join").get_json() for _ in range(6)]
    clock.advance(60)
    drops = app.extensions["services"].visits.drops
    assert drops.start_slice("drop", limit=3).more  # 3 placed (1 of them seated), 3 to go
    draw = client.get("/api/rooms/drop/draw").get_json()
    assert draw["state"] == "placing" and draw["seed"] == "" and draw["entries"] == 3
    during = {
        j["draw_id"]: client.get(f"/api/rooms/drop/position/{j['token']}").get_json()
        for j in joined
    }
    unplaced = [i for i, d in during.items() if d["status"] == "prequeue"]
    assert len(unplaced) == 3
    assert all(during[i]["position"] is None and during[i]["prequeue"] == 3 for i in unplaced)
    while drops.start_slice("drop", limit=3).more:
        pass
    order = verify_draw(client.get("/api/rooms/drop/draw").get_json()["seed"], during)
    assert set(unplaced) == set(order[3:])
    for place, i in enumerate(order[1:3], start=1):
        assert during[i]["position"] == place  # as after the start
