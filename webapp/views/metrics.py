"""``GET /metrics`` for Prometheus (docs/operations.md, "Metrics"), and the request hooks
that time every endpoint. Behind the admin token unless ``WEBAPP_METRICS_PUBLIC``."""

from __future__ import annotations

import time

from flask import Blueprint, Flask, Response, current_app, g, request
from flask.typing import ResponseReturnValue

from webapp.metrics import Metrics
from webapp.services import Services
from webapp.views.admin_api import admin_throttle, check_admin

bp = Blueprint("metrics", __name__)


def init_app(app: Flask) -> None:
    services: Services = app.extensions["services"]
    app.extensions["metrics"] = Metrics(services.rooms)
    # First of all before_request hooks: requests that CSRF or the admin throttle refuse
    # in theirs are timed too.
    app.before_request_funcs.setdefault(None, []).insert(0, start_timer)
    app.after_request(observe)
    app.register_blueprint(bp)


def metrics() -> Metrics:
    found: Metrics = current_app.extensions["metrics"]
    return found


def start_timer() -> None:
    if request.url_rule is not None and request.url_rule.websocket:
        metrics().handshake()  # its request lasts as long as the socket: hours, untimed
        return
    g.metrics_started = time.perf_counter()


def observe(response: Response) -> Response:
    started = g.pop("metrics_started", None)
    if started is not None:
        endpoint = request.endpoint or "unmatched"  # never the raw path: bounded labels
        elapsed = time.perf_counter() - started
        metrics().observe(endpoint, request.method, response.status_code, elapsed)
    return response


@bp.get("/metrics")
@admin_throttle
def scrape() -> ResponseReturnValue:
    if not current_app.config["METRICS_PUBLIC"] and (refused := check_admin()) is not None:
        return refused
    body, content_type = metrics().exposition(request.headers.get("Accept", ""))
    return body, 200, {"Content-Type": content_type, "Cache-Control": "no-store"}
