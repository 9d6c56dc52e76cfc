"""/metrics under gunicorn with 2 workers: whichever worker answers, one truth."""

from __future__ import annotations

import json
import re
import secrets
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gunicorn_app import Server, run_gunicorn
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.e2e
DURATION = "waitingroom_http_request_duration_seconds"


@pytest.fixture(scope="module")
def metrics_server(redis_url: str) -> Iterator[tuple[Server, Path]]:
    """The app under gunicorn with 2 workers, and the directory they share figures in."""
    env = {
        "REDIS_URL": redis_url,
        "WEBAPP_REDIS_PREFIX": f"metrics{secrets.token_hex(3)}",
        "WEBAPP_SECRET_KEY": "e2e-secret",
        "WEB_CONCURRENCY": "2",
        "WEBAPP_SWEEP_INTERVAL": "0",  # nobody drops out while the figures are compared
    }
    with run_gunicorn(env, log_name="metrics-gunicorn.log") as server:
        shared = re.search(r"Metrics: the workers add up their figures in (\S+)", log(server))
        assert shared, log(server)
        yield server, Path(shared.group(1))
    assert not Path(shared.group(1)).exists()  # removed when gunicorn exits


def log(server: Server) -> str:
    return server.log.read_text()


def get(server: Server, path: str, token: str | None = None) -> str:
    """One request on a new connection, so the kernel hands it to either worker."""
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"} if token else {}
    request = urllib.request.Request(server.url + path, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as reply:
        return str(reply.read().decode())


def scrape(server: Server) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = get(server, "/metrics", server.admin_token)
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def healthz_counts(shared: Path) -> dict[str, float]:
    """Each worker's own count of /healthz requests, from its file (by pid)."""
    counts = {}
    for path in shared.glob("histogram_*.db"):
        for metric in MultiProcessCollector.merge([str(path)]):
            for s in metric.samples:
                if s.name == f"{DURATION}_count" and s.labels["endpoint"] == "health.healthz":
                    counts[path.stem.removeprefix("histogram_")] = s.value
    return counts


def test_every_worker_reports_the_same_figures(metrics_server: Any) -> None:
    """Requests spread over both workers; every scrape, on either, has all of them."""
    server, shared = metrics_server
    room = f"m-{secrets.token_hex(3)}"
    server.admin(room, capacity=1)
    for _ in range(4):
        server.api("POST", f"/api/rooms/{room}/join")
    calls = 0
    # Linux hands most connections to one worker (the last to wait): ask until both served
    while len(healthz_counts(shared)) < 2 and calls < 2000:
        get(server, "/healthz")
        calls += 1
    per_worker = healthz_counts(shared)
    assert len(per_worker) == 2, f"one worker served all {calls} requests"
    assert sum(per_worker.values()) == calls

    healthz = frozenset({"endpoint": "health.healthz", "method": "GET", "status": "2xx"}.items())
    scrapes = frozenset({"endpoint": "metrics.scrape", "method": "GET", "status": "2xx"}.items())
    in_room = frozenset({("room", room)})
    figures = []
    for done in range(6):
        found = scrape(server)
        figures.append({k: v for k, v in found.items() if ("room", room) in k[1]})
        assert found[("waitingroom_room_seats_taken", in_room)] == 1
        assert found[("waitingroom_room_waiting", in_room)] == 3
        assert found[("waitingroom_room_joined_total", in_room)] == 4
        assert found[(f"{DURATION}_count", healthz)] == calls  # both workers' requests
        assert found.get((f"{DURATION}_count", scrapes), 0) == done  # each earlier scrape
    assert all(f == figures[0] for f in figures)


def test_check_ins_answered_without_flask_are_counted_and_guarded(metrics_server: Any) -> None:
    """The lean check-in (webapp/views/api/lean.py) under gunicorn: its replies carry the
    security headers, and every worker's check-ins add up under api.position."""
    server, _ = metrics_server
    room = f"lean-{secrets.token_hex(3)}"
    server.admin(room, capacity=1)
    server.api("POST", f"/api/rooms/{room}/join")
    token = server.api("POST", f"/api/rooms/{room}/join")["token"]
    position = frozenset({"endpoint": "api.position", "method": "GET", "status": "2xx"}.items())
    before = scrape(server).get((f"{DURATION}_count", position), 0)
    for _ in range(20):
        request = urllib.request.Request(
            f"{server.url}/api/rooms/{room}/position/{token}", headers={"Connection": "close"}
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert reply.headers["Content-Security-Policy"].startswith("default-src 'none'")
            assert reply.headers["X-Content-Type-Options"] == "nosniff"
            assert float(reply.headers["X-Poll-After-Seconds"]) > 0
            assert json.loads(reply.read())["position"] == 1
    assert scrape(server)[(f"{DURATION}_count", position)] == before + 20
