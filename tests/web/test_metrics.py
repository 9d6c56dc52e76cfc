"""GET /metrics: every room's figures read from Redis, and request latency per endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from building import engine
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from tests.web.conftest import running_app
from webapp.domain.reports import Reports
from webapp.web.metrics import RoomCollector

TOKEN = "metrics-admin-token-0123456789"
UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def app(redis_url: str, r: redis.Redis, clock: Any) -> Iterator[Flask]:
    """The web tests' app with the admin token and the test's clock."""
    with running_app(redis_url, ADMIN_TOKEN=TOKEN, CLOCK=clock) as app:
        yield app


def scrape(app: Flask) -> Samples:
    """Every sample of one scrape, by sample name and labels."""
    reply = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 200, reply.get_data(as_text=True)
    assert reply.mimetype == "text/plain"
    text = reply.get_data(as_text=True)
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_room_figures_come_from_redis(app: Flask, engine: Any, clock: Any) -> None:
    """Seats, line, status, joins, admissions, endings by reason and waits, exactly."""
    engine.configure("hall", {"capacity": 2, "dropout_seconds": 30})
    engine.configure("annex", {"capacity": 5, "status": "paused"})
    a, b, c, d, e = (engine.join("hall") for _ in range(5))  # a, b seated; c, d, e wait
    clock.advance(10)
    for waiting in (c, d, e):
        engine.check_in("hall", waiting.token)
    engine.leave("hall", a.token)  # c is offered the seat after a 10 s wait
    clock.advance(25)
    assert engine.check_in("hall", c.token).state == "admitted"
    engine.check_in("hall", d.token)
    clock.advance(10)
    engine.sweep("hall")  # e missed its check-in: dropped
    engine.leave("hall", b.token)  # d is offered the seat after a 45 s wait
    clock.advance(40)
    engine.sweep("hall")  # d never claimed it: unclaimed
    engine.join("hall")  # seated at once
    engine.join("hall")  # waits

    found = scrape(app)
    assert value(found, "waitingroom_room_capacity", room="hall") == 2
    assert value(found, "waitingroom_room_seats_taken", room="hall") == 2
    assert value(found, "waitingroom_room_waiting", room="hall") == 1
    assert value(found, "waitingroom_room_joined_total", room="hall") == 7
    assert value(found, "waitingroom_room_admitted_total", room="hall") == 5
    ended = {"left": 2, "dropped": 1, "unclaimed": 1, "removed": 0, "grace": 0, "session": 0}
    for reason, count in ended.items():
        assert value(found, "waitingroom_room_ended_total", room="hall", reason=reason) == count
    buckets = {"5.0": 0, "15.0": 1, "30.0": 1, "60.0": 2, "7200.0": 2, "+Inf": 2}
    for le, count in buckets.items():
        assert value(found, "waitingroom_room_wait_seconds_bucket", room="hall", le=le) == count
    assert value(found, "waitingroom_room_wait_seconds_sum", room="hall") == 55
    assert value(found, "waitingroom_room_wait_seconds_count", room="hall") == 2
    for status, on in {"open": 1, "paused": 0, "closed": 0}.items():
        assert value(found, "waitingroom_room_status", room="hall", status=status) == on
    assert value(found, "waitingroom_room_status", room="annex", status="paused") == 1
    assert value(found, "waitingroom_room_capacity", room="annex") == 5
    assert value(found, "waitingroom_room_joined_total", room="annex") == 0
    assert value(found, "waitingroom_room_wait_seconds_count", room="annex") == 0


def test_the_collector_reads_every_room_on_redis_and_cluster(db: Any, keys: Any) -> None:
    """Rooms in different cluster slots are read together, each with its own figures."""
    rooms = engine(db, keys)
    for name, capacity in (("a", 1), ("b", 2), ("c", 3)):
        rooms.configure(name, {"capacity": capacity})
        for _ in range(2):
            rooms.join(name)
    collector = RoomCollector(Reports(rooms))
    figures = [(f.name, f.capacity, f.taken, f.waiting) for f in collector.figures()]
    assert figures == [("a", 1, 1, 1), ("b", 2, 2, 0), ("c", 3, 2, 0)]
    families = {family.name: family for family in collector.collect()}
    assert families["waitingroom_redis_script_calls"].samples  # every node's, on a cluster


def test_a_deleted_room_is_not_reported(app: Flask, engine: Any, r: redis.Redis) -> None:
    """A name left in the room index without its room yields no samples."""
    engine.configure("hall", {"capacity": 1})
    r.sadd(engine.keys.rooms, "ghost")
    rooms = {dict(labels).get("room") for _, labels in scrape(app)}
    assert "hall" in rooms and "ghost" not in rooms


def test_metrics_need_the_admin_token(app: Flask) -> None:
    """No token or a wrong one: 401; public metrics need none."""
    client = app.test_client()
    assert client.get("/metrics").status_code == 401
    wrong = {"Authorization": "Bearer not-the-admin-token-at-all"}
    assert client.get("/metrics", headers=wrong).status_code == 401
    app.config["METRICS_PUBLIC"] = True
    reply = client.get("/metrics")
    assert reply.status_code == 200
    assert "waitingroom_http_request_duration_seconds" in reply.get_data(as_text=True)


def test_a_redis_outage_answers_503(app: Flask, engine: Any, monkeypatch: Any) -> None:
    """Without Redis the rooms' figures are unknown: 503 with Retry-After, like any page."""

    def unreachable() -> list[str]:
        raise redis.ConnectionError("Redis is down")

    monkeypatch.setattr(engine, "names", unreachable)
    reply = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "5"


def test_request_latency_per_endpoint(app: Flask) -> None:
    """Each request is timed under its Flask endpoint, method and status class."""
    client = app.test_client()
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
    assert client.get("/api/rooms").status_code == 200
    assert client.get("/no/such/page").status_code == 404
    assert client.open("/healthz", method="BREW").status_code == 405
    scrape(app)
    found = scrape(app)
    duration = "waitingroom_http_request_duration_seconds"
    timed = {
        ("health.healthz", "GET", "2xx"): 3,
        ("api.list_rooms", "GET", "2xx"): 1,
        ("unmatched", "GET", "4xx"): 1,
        ("unmatched", "other", "4xx"): 1,
        ("metrics.scrape", "GET", "2xx"): 1,  # the first scrape; this one is not over yet
    }
    for (endpoint, method, status), count in timed.items():
        labels = {"endpoint": endpoint, "method": method, "status": status}
        assert value(found, f"{duration}_count", **labels) == count
        assert value(found, f"{duration}_bucket", **labels, le="+Inf") == count
        assert 0 < value(found, f"{duration}_sum", **labels) < 5
    endpoints = {dict(labels).get("endpoint") for name, labels in found if duration in name}
    assert endpoints == {e for e, _, _ in timed}  # never a raw path


def test_websocket_handshakes_are_counted_not_timed(app: Flask, make_room: Any) -> None:
    """A socket's request lives for hours: its handshake is counted, never timed."""
    make_room("hall")
    app.test_client().get("/rooms/hall/ws", headers={**UPGRADE, "Origin": "http://localhost"})
    found = scrape(app)
    assert value(found, "waitingroom_websocket_handshakes_total") == 1
    assert not any(dict(labels).get("endpoint") == "ws.room_socket" for _, labels in found)


def test_refused_joins_and_puzzles_are_counted(app: Flask, make_room: Any) -> None:
    """Each refused join counts once under its reason and status; a puzzle handed out
    and one solved are counted with their work."""
    from building import solved

    make_room("shut", capacity=1, status="closed")
    make_room("quiz", capacity=5, challenge="on", challenge_cost=100)
    client = app.test_client()
    assert client.post("/api/rooms/shut/join").status_code == 409
    asked = client.post("/api/rooms/quiz/join")
    assert asked.status_code == 403
    payload = solved(asked.get_json()["challenge"])
    assert client.post("/api/rooms/quiz/join", json={"altcha": payload}).status_code == 200
    assert client.post("/api/rooms/nowhere/join").status_code == 404  # no room: no count

    found = scrape(app)
    refused = "waitingroom_room_refused_total"
    assert value(found, refused, room="shut", reason="closed", code="409") == 1
    assert value(found, refused, room="quiz", reason="puzzle", code="403") == 1
    assert value(found, refused, room="quiz", reason="closed", code="409") == 0
    assert not any(dict(labels).get("room") == "nowhere" for _, labels in found)
    assert value(found, "waitingroom_puzzle_cost_count", room="quiz") == 1
    assert value(found, "waitingroom_puzzle_cost_sum", room="quiz") == 100
    assert value(found, "waitingroom_puzzle_solved_tries_count", room="quiz") == 1
    assert value(found, "waitingroom_puzzle_solved_tries_sum", room="quiz") <= 100


def test_estimates_are_scored_at_admission(app: Flask, visits: Any, clock: Any) -> None:
    """An admission from the line scores the wait told at the join: its error, and
    whether the actual wait fell in the range told."""
    visits.configure("hall", {"capacity": 1, "typical_stay_seconds": 60})
    first = visits.join("hall", identity="a")
    second = visits.join("hall", identity="b")
    assert second.ticket.position == 1
    assert visits.rooms.written()  # the prediction told at the join is kept (written behind)
    for step in (20, 20, 10):  # b checks in while it waits
        clock.advance(step)
        visits.rooms.check_in("hall", second.ticket.token)
    visits.end("hall", first.ticket.token)  # b is offered the seat after 50 s
    assert visits.rooms.check_in("hall", second.ticket.token).state == "admitted"
    found = scrape(app)
    assert value(found, "waitingroom_room_estimate_error_seconds_count", room="hall") == 1
    told = visits.rooms.client.xrange(visits.rooms.keys.room("hall").accuracy)[0][1]
    wait, low, high = (float(x) for x in told["predicted"].split(",")[:3])  # shown, then model
    error = value(found, "waitingroom_room_estimate_error_seconds_sum", room="hall")
    assert error == pytest.approx(abs(wait - 50))
    inside = value(found, "waitingroom_room_estimates_in_range_total", room="hall")
    assert inside == (1 if low <= 50 <= high else 0)


def errors_but_noscript(r: redis.Redis) -> int:
    """Redis's error replies so far but NOSCRIPT (a script's first call on a server
    that has not loaded it yet, which redis-py answers by loading it: any of the app's
    threads may make one meanwhile)."""
    stats = r.info("errorstats")
    return sum(v["count"] for name, v in stats.items() if name != "errorstat_NOSCRIPT")


def test_mail_outbox_gate_and_redis_figures(app: Flask, make_room: Any, r: redis.Redis) -> None:
    """The mail outbox's depth (unread and pending to the mailer's group), its notices
    by state, the gate's answers, and Redis's own script time."""
    make_room("hall", capacity=1)
    keys = app.extensions["services"].keys
    outbox = keys.room("hall").outbox
    for i in range(3):
        r.xadd(outbox, {"entry": f"e{i}", "kind": "offered"})
    assert value(scrape(app), "waitingroom_mail_outbox_depth", room="hall") == 3  # no group
    r.xgroup_create(outbox, "mailer", id="0")
    (_, [(taken, _)]), *_ = r.xreadgroup("mailer", "w1", {outbox: ">"}, count=1)
    r.xack(outbox, "mailer", taken)  # one done, none pending, two unread
    r.hset(keys.deliveries("hall"), mapping={"#sent": 1, "#failed": 2})
    before = errors_but_noscript(r)
    app.test_client().get("/gate/hall")  # no pass: refused
    found = scrape(app)
    assert errors_but_noscript(r) == before  # the scrape made no error
    assert value(found, "waitingroom_mail_outbox_depth", room="hall") == 2
    assert value(found, "waitingroom_mail_notices", room="hall", state="failed") == 2
    assert value(found, "waitingroom_mail_notices", room="hall", state="retry") == 0
    assert value(found, "waitingroom_gate_checks_total", result="refused") == 1
    assert value(found, "waitingroom_gate_checks_total", result="fresh") == 0
    assert value(found, "waitingroom_redis_script_calls_total", command="evalsha") > 0
    assert value(found, "waitingroom_redis_script_seconds_total", command="evalsha") > 0
    assert value(found, "waitingroom_pass_revocations") == 0


def test_an_outage_is_counted(app: Flask, monkeypatch: Any) -> None:
    """A request Redis failed (answered 503) counts in redis_errors_total."""

    def unreachable(room: str) -> None:
        raise redis.ConnectionError("Redis is down")

    assert value(scrape(app), "waitingroom_redis_errors_total") == 0
    reports = app.extensions["services"].reports
    monkeypatch.setattr(reports, "summary", unreachable)
    assert app.test_client().get("/api/rooms/hall/qsize").status_code == 503
    monkeypatch.undo()
    assert value(scrape(app), "waitingroom_redis_errors_total") == 1
