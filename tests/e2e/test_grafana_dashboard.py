"""docs/grafana/waiting-room.json against the real metrics (issue 31): Debian's
Prometheus scrapes the app under gunicorn (2 workers, so the request figures go through
prometheus_client's multiprocess mode) every second while traffic runs (joins, an
admission from the line, refusals, a puzzle solved, gate checks), then every panel's
expression, its variables filled in as Grafana would, runs through Prometheus' query API:
none fails, and every panel has data.

With ``WEBAPP_SHOTS`` set to a directory, each panel's last minute is also drawn (the
panel's own SVG charts, one page) and screenshotted there as grafana-panels.png.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from building import solved
from gunicorn_app import ROOT, Server, e2e_server, free_port, stopping
from receiver import Receiver

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DASHBOARD = ROOT / "docs" / "grafana" / "waiting-room.json"
# What Grafana puts in for the dashboard's variables when "All" rooms are chosen, and a
# rate window that holds the whole test
VARIABLES = {"$__rate_interval": "1m", "$__interval": "5s", "$room": ".*", "${room}": ".*"}
# The webhooks' metrics (issue 31's other half): their panels must query without error,
# and are held to "has data" once /metrics exposes them (it does, with the worker below).
LATER = ("waitingroom_webhook_",)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:EdDSA is deprecated")]


def panels() -> list[dict[str, Any]]:
    """Every panel of the dashboard with queries (rows hold none)."""
    found = json.loads(DASHBOARD.read_text())
    return [p for p in found["panels"] if p.get("targets")]


def filled(expr: str) -> str:
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a variable the test does not fill: {expr}"
    return expr


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[Server]:
    with e2e_server(redis_url, "grafana-gunicorn.log", WEBAPP_SWEEP_INTERVAL="0.25") as started:
        yield started


@pytest.fixture(scope="module")
def prometheus(server: Server) -> Iterator[str]:
    """Prometheus on a free loopback port, scraping the app every second; its URL."""
    if not Path(PROMETHEUS).exists():
        pytest.skip("no prometheus (apt-get install prometheus)")
    where = Path(tempfile.mkdtemp(prefix="wr-prometheus-"))
    target = urllib.parse.urlsplit(server.url).netloc
    (where / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: waiting-room\n"
        f"    authorization:\n      credentials: {server.admin_token}\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = open(where / "prometheus.log", "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={where / 'prometheus.yml'}",
         f"--storage.tsdb.path={where / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        with stopping(process, timeout=10):
            until(lambda: up(url), 20, f"prometheus: {(where / 'prometheus.log').read_text()}")
            yield url
    finally:
        log.close()
        shutil.rmtree(where, ignore_errors=True)


def up(url: str) -> bool:
    """Prometheus answers and its scrape of the app succeeded once."""
    try:
        found = query(url, "up")
    except (urllib.error.URLError, ConnectionError):
        return False
    return any(sample["value"][1] == "1" for sample in found)


def until(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def query(url: str, expr: str, **params: str) -> list[dict[str, Any]]:
    """An instant query's result (``params``: start, end, step make it a range query)."""
    path = "query_range" if params else "query"
    data = urllib.parse.urlencode({"query": expr, **params}).encode()
    with urllib.request.urlopen(f"{url}/api/v1/{path}", data=data, timeout=10) as reply:
        answer = json.load(reply)
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def call(server: Server, method: str, path: str, body: Any = None, **headers: str) -> Any:
    """The app's answer: (status, JSON body or None)."""
    request = urllib.request.Request(
        server.url + path, method=method, headers={"Content-Type": "application/json", **headers},
        data=None if body is None else json.dumps(body).encode(),
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            raw = reply.read()
            return reply.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as refused:
        with refused:
            raw = refused.read()
            return refused.code, (json.loads(raw) if raw[:1] == b"{" else None)


def traffic(server: Server) -> None:
    """Joins, admissions (at once and from the line), ends, refusals of five kinds, a
    puzzle asked and solved, gate checks of every answer."""
    server.admin("hall", capacity=2, dropout_seconds=30)
    tokens = []
    for i in range(6):
        status, body = call(server, "POST", "/api/rooms/hall/join", {"name": f"P{i}"})
        assert status == 200, body
        tokens.append(body["token"])
    time.sleep(1.5)  # a wait in line to measure
    for token in tokens[:3]:  # two seats freed: the head of the line is offered them
        call(server, "POST", f"/api/rooms/hall/leave/{token}")
    for token in tokens[2:]:
        call(server, "GET", f"/api/rooms/hall/position/{token}")
    server.admin("full", capacity=1, max_line_length=1)
    assert [call(server, "POST", "/api/rooms/full/join")[0] for _ in range(3)] == [200, 200, 503]
    server.admin("shut", status="closed")
    assert call(server, "POST", "/api/rooms/shut/join")[0] == 409
    server.admin("members", identity="required", identity_secret="s" * 32)
    assert call(server, "POST", "/api/rooms/members/join")[0] == 401
    server.admin("puzzle", challenge="on", challenge_cost=100)  # the least work
    for _ in range(2):  # twice, a scrape apart: a series' first sample has no rate yet
        status, body = call(server, "POST", "/api/rooms/puzzle/join")
        assert status == 403, body
        status, body = call(server, "POST", "/api/rooms/puzzle/join",
                            {"altcha": solved(body["challenge"])})  # fmt: skip
        assert status == 200, body
        time.sleep(1.2)
    server.admin("shop", capacity=1, site_url="https://shop.example/")
    status, body = call(server, "POST", "/api/rooms/shop/join")
    assert status == 200 and body["pass"], body
    for _ in range(3):
        assert call(server, "GET", "/gate/shop", Authorization=f"Bearer {body['pass']}")[0] == 204
    assert call(server, "GET", "/gate/shop")[0] == 401


@contextlib.contextmanager
def webhooks_sent(server: Server) -> Iterator[Receiver]:
    """A webhook endpoint taking every room's events, a receiver on loopback, and the
    webhook worker beside the app (``python -m webapp.workers.webhooks``, the app's
    settings), so the webhooks' panels have deliveries to show."""
    receiver = Receiver()
    token = f"Bearer {server.admin_token}"
    status, body = call(server, "POST", "/api/admin/webhooks", {"url": receiver.url},
                        Authorization=token)  # fmt: skip
    assert status == 201, body
    worker = subprocess.Popen([sys.executable, "-m", "webapp.workers.webhooks"],
                              env=dict(server.env or {}), cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        with stopping(worker, timeout=10):
            yield receiver
    finally:
        receiver.stop()


def test_every_panel_has_data(server: Server, prometheus: str, tmp_path: Path) -> None:
    """Every panel's queries run without error in Prometheus, and each panel shows data."""
    with webhooks_sent(server) as receiver:
        traffic(server)
        until(lambda: len(receiver.ok()) >= 20, 20, "the webhooks were not delivered")
    started = time.time()
    # the figures of the end of the traffic scraped (twice, for the rates)
    until(lambda: bool(query(prometheus, "waitingroom_room_refused_total{code='401'} > 0")),
          10, "the refusals never reached Prometheus")  # fmt: skip
    time.sleep(2.5)
    exposed = {s["__name__"] for s in metric_names(prometheus)}
    empty, shown = [], []
    for panel in panels():
        results = []
        for target in panel["targets"]:
            results.append((target, query(prometheus, filled(target["expr"]))))
        has_data = any(
            sample["value"][1] not in ("NaN", "+Inf", "-Inf") for _, r in results for sample in r
        )
        names = set(
            re.findall(r"waitingroom_[a-z_]+", " ".join(t["expr"] for t in panel["targets"]))
        )
        later = all(n.startswith(LATER) for n in names) and not names & exposed
        if not has_data and not later:
            empty.append(panel["title"])
        shown.append((panel, results))
    assert not empty, f"panels without data: {empty}"
    assert time.time() - started < 20
    if os.environ.get("WEBAPP_SHOTS"):
        draw(prometheus, Path(os.environ["WEBAPP_SHOTS"]))


def metric_names(url: str) -> list[dict[str, str]]:
    with urllib.request.urlopen(f"{url}/api/v1/label/__name__/values", timeout=10) as reply:
        return [{"__name__": name} for name in json.load(reply)["data"]]


def draw(prometheus: str, where: Path) -> None:
    """Each panel's queries over the last two minutes, drawn as the admin panel's charts
    are (every series of a panel on one chart, at most six), on one page screenshotted
    by Chromium."""
    from playwright.sync_api import sync_playwright

    from webapp.views.shared import charts

    end = time.time()
    times = [end - 120 + 2 * i for i in range(61)]
    styles = ("solid", "dashed", "dotted", "red", "green", "orange")
    cards = []
    for panel in panels():
        lines: list[tuple[str, list[float | None]]] = []
        for target in panel["targets"]:
            found = query(prometheus, filled(target["expr"]), start=str(times[0]),
                          end=str(times[-1]), step="2")  # fmt: skip
            for series in found:
                at = {round(float(t)): v for t, v in series["values"]}
                values = [_value(at.get(round(t))) for t in times]
                label = target["legendFormat"]
                for key, value in series["metric"].items():
                    label = label.replace("{{" + key + "}}", value)
                lines.append((label, values))
        if not lines:
            body = "<p>No series: the webhooks' metrics are not exposed by this build.</p>"
        else:
            shown = lines[:6]
            chart = charts.line_chart(times, shown[0][1], panel["title"],
                                      more=[v for _, v in shown[1:]])  # fmt: skip
            named = zip(styles, [label for label, _ in shown], strict=False)
            legend = "; ".join(f"{style}: {label}" for style, label in named)
            more = f" (and {len(lines) - 6} more)" if len(lines) > 6 else ""
            body = f"{chart.svg}<p class=legend>{legend}{more}</p>"
        cards.append(f"<section><h2>{panel['title']}</h2>{body}</section>")
    page = (
        "<!doctype html><meta charset=utf-8><style>"
        "body{font:13px sans-serif;margin:12px} section{display:inline-block;vertical-align:top;"
        "width:380px;height:300px;margin:5px;border:1px solid #ccc;padding:6px;overflow:hidden}"
        " h2{font-size:13px;margin:0 0 4px} .chart{width:370px;height:auto}"
        " .series{fill:none;stroke:#1f5fbf;stroke-width:1.5} .grid{stroke:#ddd}"
        " .series-1{stroke-dasharray:6 3} .series-2{stroke-dasharray:1.5 3}"
        " .series-3{stroke:#c0392b} .series-4{stroke:#27ae60} .series-5{stroke:#e67e22}"
        " .axis{stroke:#444} .tick{font-size:10px;fill:#444} .dot-point{fill:#1f5fbf}"
        " .legend{font-size:11px;margin:2px 0}</style>"
        "<h1>docs/grafana/waiting-room.json: each panel's queries, the last two minutes "
        "of the test's traffic</h1>" + "".join(cards)
    )  # fmt: skip
    where.mkdir(parents=True, exist_ok=True)
    (where / "grafana-panels.html").write_text(page)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        shot = browser.new_page(viewport={"width": 1640, "height": 900})
        shot.goto((where / "grafana-panels.html").as_uri())
        shot.screenshot(path=str(where / "grafana-panels.png"), full_page=True)
        browser.close()


def _value(raw: str | None) -> float | None:
    return None if raw is None or raw in ("NaN", "+Inf", "-Inf") else float(raw)
