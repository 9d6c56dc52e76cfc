"""What operators' machines read: the health probes and the Prometheus metrics."""

from __future__ import annotations

from flask import Flask

from webapp.views.ops import health


def init_app(app: Flask) -> None:
    app.register_blueprint(health.bp)  # /healthz, /readyz
