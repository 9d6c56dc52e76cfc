"""The baseline for ``api_throughput.py``: a bare Flask endpoint doing one Redis round-trip.

Served by gunicorn with the same settings as the real app, so the ratio of the two is
what the waiting-room API costs on top of "Flask + one Redis call":
``gunicorn -c python:webapp.gunicorn_conf --pythonpath bench 'baseline_app:create_app()'``.
"""

from __future__ import annotations

import os

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue

from webapp.redis.connection import connect

COUNTER = "bench:baseline:hits"


def create_app() -> Flask:
    app = Flask(__name__)
    # The same client (and client options) the real app uses: one per process.
    client = connect(os.environ["REDIS_URL"])

    @app.get("/ping")
    def ping() -> ResponseReturnValue:
        return jsonify(hits=client.incr(COUNTER))

    return app
