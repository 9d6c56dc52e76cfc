"""Webhooks (issue 31): every event type reaches a real receiver on loopback, signed so
that the standardwebhooks package verifies it; retries across a receiver that is down,
rotation, one ticket's events in order, an endpoint disabled after 24 hours of
failures, and no event lost when the worker is killed mid-delivery."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from receiver import Receiver
from standardwebhooks.webhooks import WebhookVerificationError

from webapp.domain.clock import Clock
from webapp.domain.tickets import public_id
from webapp.domain.visits import Visits
from webapp.domain.waitlist import Waitlists
from webapp.domain.webhooks import EVENT_TYPES, Webhooks, next_try
from webapp.workers.webhooks import WebhookWorker

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000


@pytest.fixture
def webhooks(visits: Visits, clock: Any) -> Webhooks:
    rooms = visits.rooms
    hooks = Webhooks(rooms.client, rooms.keys, rooms.scripts, Clock(clock))
    visits.webhooks = hooks
    return hooks


@pytest.fixture
def receiver() -> Any:
    server = Receiver()
    yield server
    server.stop()


@pytest.fixture
def worker(webhooks: Webhooks, clock: Any) -> Any:
    w = WebhookWorker(webhooks, Clock(clock), worker="test", threads=4)
    yield w
    w.pool.shutdown(wait=True)


def drain(worker: WebhookWorker, rounds: int = 20) -> None:
    """Rounds until one finds nothing to do (each round's sends finished first)."""
    for _ in range(rounds):
        busy = worker.run_once()
        worker.wait_idle()
        if not busy:
            return


def test_every_event_type_arrives_signed(
    visits: Visits, webhooks: Webhooks, worker: WebhookWorker, receiver: Receiver, clock: Any
) -> None:
    """Joined, admitted, ended, changed, drop started, sold out, waitlist confirmed and
    admitted: each verified by the standardwebhooks package, with the ticket's public id,
    never its token."""
    _, secret = webhooks.create(receiver.url)
    visits.configure("live", {"capacity": 1})
    seated = visits.join("live", identity="a").ticket
    waiting = visits.join("live", identity="b").ticket
    visits.configure("live", {"capacity": 2})  # room.changed; b admitted
    visits.end("live", seated.token)
    visits.configure("drop", {"capacity": 1, "prequeue_at": T0 + 60, "starts_at": T0 + 120})
    clock.advance(61)
    visits.join("drop", identity="c")
    clock.advance(60)
    visits.sweep("drop")  # the start: drop.started
    visits.configure("shop", {"capacity": 1, "stock": 1})
    visits.join("shop", identity="d")
    visits.join("shop", identity="e")
    visits.set_stock("shop", 0)  # room.sold_out, e ends sold_out
    visits.configure("list", {"kind": "waitlist"})
    waitlists = Waitlists(visits.rooms, secret=b"s")
    entry = waitlists.join("list", "P", "p@example.org")
    waitlists.confirm("list", entry.id)
    visits.rooms.admit("list", 1)
    drain(worker)
    got = receiver.ok()
    assert {r.event["type"] for r in got} == set(EVENT_TYPES)
    for r in got:
        assert r.verify(secret)["type"] == r.event["type"]
        assert seated.token not in r.body and waiting.token not in r.body
    by_type = defaultdict(list)
    for r in got:
        by_type[r.event["type"]].append(r.event["data"])
    assert {"room": "live", "ticket": public_id(waiting.token)}.items() <= next(
        d for d in by_type["visitor.admitted"] if d.get("ticket") == public_id(waiting.token)
    ).items()
    assert {"room": "live", "ticket": public_id(seated.token), "reason": "left"} in [
        {k: d[k] for k in ("room", "ticket", "reason")} for d in by_type["visitor.ended"]
    ]
    assert by_type["room.changed"][0]["settings"]["capacity"] == {"old": "1", "new": "2"}
    started = by_type["drop.started"][0]
    assert len(started["commitment"]) == 64 and len(started["seed"]) == 64
    assert any(d["reason"] == "sold_out" for d in by_type["visitor.ended"])
    assert by_type["waitlist.confirmed"][0]["entry"] == public_id(entry.id)
    with pytest.raises(WebhookVerificationError):
        got[0].verify("whsec_" + "A" * 43 + "=")


def test_a_room_nobody_listens_to_writes_no_events(
    visits: Visits, webhooks: Webhooks, receiver: Receiver
) -> None:
    """No endpoint for the room: its scripts write nothing; one made later: they do."""
    visits.configure("quiet", {"capacity": 1})
    visits.configure("other", {"capacity": 1})
    visits.join("quiet", identity="a")
    events = visits.rooms.keys.room("quiet").events
    assert visits.rooms.client.exists(events) == 0
    webhooks.create(receiver.url, rooms=["quiet"])
    visits.join("quiet", identity="b")
    visits.join("other", identity="b")
    assert visits.rooms.client.xlen(events) == 1
    assert visits.rooms.client.exists(visits.rooms.keys.room("other").events) == 0


def test_receiver_down_then_up_every_event_arrives_once(
    visits: Visits, webhooks: Webhooks, worker: WebhookWorker, receiver: Receiver, clock: Any
) -> None:
    """The receiver down for 10 s: tries fail and are retried on the schedule; once it
    is up every event arrives, each webhook-id answered 2xx exactly once, and each try
    of one event carried the same webhook-id."""
    _, secret = webhooks.create(receiver.url)
    visits.configure("r", {"capacity": 3})
    receiver.stop()
    for i in range(6):
        visits.join("r", identity=f"v{i}")
    for _ in range(10):  # ten seconds down: the tries after 1 s and 5 s fail too
        drain(worker)
        clock.advance(1)
    assert receiver.ok() == []
    receiver.start()
    clock.advance(30)
    drain(worker)
    ok = receiver.ok()
    ids = [r.id for r in ok]
    assert len(ids) == len(set(ids)) == 6 + 3  # six joined, three seated at once
    for r in ok:
        r.verify(secret)
    figures = webhooks.figures()
    assert figures.pending == 0 and figures.delivered == 9 and figures.retry >= 9


def test_one_tickets_events_arrive_in_order(
    visits: Visits, webhooks: Webhooks, worker: WebhookWorker, receiver: Receiver, clock: Any
) -> None:
    """Joined, admitted, ended of each ticket reach the receiver in that order, even
    when the receiver refuses some tries (a refused one holds its ticket's next)."""
    webhooks.create(receiver.url)
    visits.configure("o", {"capacity": 50})
    tokens = [visits.join("o", identity=f"v{i}").ticket.token for i in range(30)]
    receiver.status = 500
    drain(worker)  # every ticket's first event refused: its next ones wait
    for token in tokens[::2]:
        visits.end("o", token)
    receiver.status = 200
    clock.advance(2)
    drain(worker)
    seen: dict[str, list[str]] = defaultdict(list)
    for r in receiver.ok():
        seen[r.event["data"]["ticket"]].append(r.event["type"])
    for i, token in enumerate(tokens):
        want = ["visitor.joined", "visitor.admitted"] + (["visitor.ended"] if i % 2 == 0 else [])
        assert seen[public_id(token)] == want


def test_rotation_both_secrets_sign_for_a_day(
    visits: Visits, webhooks: Webhooks, worker: WebhookWorker, receiver: Receiver, clock: Any
) -> None:
    """After a rotation each try carries two signatures: the old secret and the new one
    both verify; a day later the old one no longer does."""
    endpoint, old = webhooks.create(receiver.url)
    visits.configure("rot", {"capacity": 5})
    rotated = webhooks.rotate(endpoint.id)
    assert rotated is not None
    new = rotated[1]
    visits.join("rot", identity="a")
    drain(worker)
    first = receiver.ok()[-1]
    assert len(first.headers["webhook-signature"].split(" ")) == 2
    first.verify(old)
    first.verify(new)
    clock.advance(86401)
    visits.join("rot", identity="b")
    drain(worker)
    later = receiver.ok()[-1]
    later.verify(new)
    with pytest.raises(WebhookVerificationError):
        later.verify(old)


def test_failing_for_a_day_fails_the_delivery_and_disables_the_endpoint(
    visits: Visits, webhooks: Webhooks, worker: WebhookWorker, receiver: Receiver, clock: Any
) -> None:
    """Every try refused: retries after 1 s, 5 s, 30 s, 2 min, 10 min, 30 min, then
    hourly; after 24 hours the delivery is failed and the endpoint disabled; "send
    again" once it is enabled delivers it with the same webhook-id."""
    endpoint, _ = webhooks.create(receiver.url)
    visits.configure("f", {"capacity": 1})
    receiver.status = 503
    visits.join("f", identity="a")
    drain(worker)
    (delivery,) = [d for d in webhooks.deliveries(endpoint.id) if d.type == "visitor.joined"]
    steps = []
    while True:
        d = webhooks.delivery(endpoint.id, delivery.id)
        assert d is not None
        if d.state != "retry":
            break
        assert d.next is not None
        steps.append(round(d.next - clock()))
        clock.advance(d.next - clock())
        drain(worker)
    assert steps[:7] == [1, 5, 30, 120, 600, 1800, 3600]
    assert d.state == "failed" and d.status == 503 and d.attempts == len(steps) + 1
    disabled = webhooks.get(endpoint.id)
    assert disabled is not None and not disabled.enabled and disabled.disabled_at
    tries = {r.id for r in receiver.received}
    assert tries == {delivery.id}
    receiver.status = 200
    webhooks.update(endpoint.id, {"enabled": True})
    assert webhooks.resend(endpoint.id, delivery.id)
    drain(worker)
    # the failed one, sent again, and its ticket's admission that it held back
    assert sorted(r.event["type"] for r in receiver.ok()) == ["visitor.admitted", "visitor.joined"]
    assert delivery.id in {r.id for r in receiver.ok()}


def test_the_schedule_gives_up_after_a_day() -> None:
    """next_try: the steps, then hourly, none past 24 hours from the first try."""
    assert next_try(1, 0, 0) == 1
    assert next_try(6, 0, 100) == 1900
    assert next_try(7, 0, 1000) == 4600
    assert next_try(30, 0, 86000) is None


@pytest.mark.slow
def test_worker_killed_mid_delivery_loses_nothing(
    visits: Visits, webhooks: Webhooks, receiver: Receiver, redis_url: str, keys: Any
) -> None:
    """A worker process killed (SIGKILL) while receivers are still answering: the next
    worker sends again what it had claimed (same webhook-id) and everything arrives."""
    webhooks.clock = Clock()  # real time: two processes share it
    visits.rooms.clock = Clock()
    _, secret = webhooks.create(receiver.url)
    visits.configure("k", {"capacity": 100})
    receiver.delay = 0.5
    for i in range(20):
        visits.join("k", identity=f"v{i}")
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WEBAPP_REDIS_PREFIX": keys.prefix,
        "WEBAPP_WEBHOOK_LEASE_SECONDS": "2",
        "WEBAPP_WEBHOOK_WORKER": "host-a",
    }
    first = subprocess.Popen([sys.executable, "-m", "webapp.workers.webhooks"], env=env, cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 20
    while not receiver.received and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    receiver.delay = 0
    second = subprocess.Popen([sys.executable, "-m", "webapp.workers.webhooks"],
                              env={**env, "WEBAPP_WEBHOOK_WORKER": "host-b"}, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len({r.id for r in receiver.ok()}) < 40:
            time.sleep(0.1)
    finally:
        second.terminate()
        second.wait(timeout=10)
    ok = receiver.ok()
    assert len({r.id for r in ok}) == 40  # 20 joined, 20 admitted
    for r in ok:
        r.verify(secret)


def test_metrics_name_the_outbox(
    visits: Visits, webhooks: Webhooks, worker: WebhookWorker, receiver: Receiver, clock: Any
) -> None:
    """/metrics: the outbox's depth, the tries by result and the delivery time histogram
    (waitingroom_webhook_*, as the dashboard reads them), from the endpoints' counts."""
    from webapp.domain.reports import Reports
    from webapp.web.metrics import Metrics

    webhooks.create(receiver.url)
    visits.configure("m", {"capacity": 1})
    visits.join("m", identity="a")
    receiver.status = 500
    drain(worker)
    receiver.status = 200
    clock.advance(2)
    drain(worker)
    visits.join("m", identity="b")
    receiver.status = 500
    drain(worker)  # its event refused: in the outbox, to be tried again
    text, _ = Metrics(Reports(visits.rooms), webhooks).exposition("text/plain")
    lines = text.decode().splitlines()
    assert "waitingroom_webhook_outbox_depth 1.0" in lines
    assert 'waitingroom_webhook_deliveries_total{result="delivered"} 2.0' in lines
    assert 'waitingroom_webhook_deliveries_total{result="retry"} 2.0' in lines
    assert 'waitingroom_webhook_deliveries_total{result="failed"} 0.0' in lines
    assert "waitingroom_webhook_delivery_seconds_count 2.0" in lines
    assert 'waitingroom_webhook_delivery_seconds_bucket{le="+Inf"} 2.0' in lines
