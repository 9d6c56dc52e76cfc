"""``GET /metrics`` for Prometheus (docs/operations.md, "Metrics"), and the middleware
that times every endpoint. Behind the admin token unless ``WEBAPP_METRICS_PUBLIC``."""

from __future__ import annotations

from flask import Blueprint, Flask, current_app, request
from flask.typing import ResponseReturnValue

from webapp.services import Services
from webapp.views import services
from webapp.views.shared.admin import admin_throttle, check_admin
from webapp.web.metrics import Metrics, TimedRequests

bp = Blueprint("metrics", __name__)


def init_app(app: Flask, built: Services) -> None:
    # Outside every hook: requests that CSRF or the admin throttle refuse are timed too.
    app.wsgi_app = TimedRequests(app.wsgi_app, built.metrics)  # type: ignore[method-assign]
    app.register_blueprint(bp)


def metrics() -> Metrics:
    return services().metrics


@bp.get("/metrics")
@admin_throttle
def scrape() -> ResponseReturnValue:
    if not current_app.config["METRICS_PUBLIC"] and (refused := check_admin()) is not None:
        return refused
    body, content_type = metrics().exposition(request.headers.get("Accept", ""))
    return body, 200, {"Content-Type": content_type, "Cache-Control": "no-store"}
