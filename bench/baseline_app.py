"""The baselines for ``api_throughput.py``: bare Flask endpoints, one Redis call each.

Served by gunicorn with the same settings and worker class as the real app, so the
ratio of the two is what the waiting-room API costs on top of "Flask + one Redis call":
``gunicorn -c python:webapp.gunicorn_conf --pythonpath bench 'baseline_app:create_app()'``.

- ``GET /ping``: one ``INCR``: the cheapest round trip.
- ``POST /line`` and ``GET /line/<token>``: one ``EVALSHA`` of a three-command script
  (``ZADD NX``, ``ZRANK``, ``ZCARD``): a line in its barest form, the floor a join or a
  check-in of one script call could reach. Its reply is JSON of the same size class.
"""

from __future__ import annotations

import os
import secrets

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue

from webapp.redis.connection import connect

COUNTER = "bench:baseline:hits"
LINE = "bench:baseline:line"
# KEYS: 1 the line (zset). ARGV: 1 token, 2 score. Reply: {position (1 = head), length}
BARE_LINE = """
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
return {redis.call('ZRANK', KEYS[1], ARGV[1]) + 1, redis.call('ZCARD', KEYS[1])}
"""


def create_app() -> Flask:
    app = Flask(__name__)
    # The same client (and client options) the real app uses: one per process.
    client = connect(os.environ["REDIS_URL"])
    line = client.register_script(BARE_LINE)

    @app.get("/ping")
    def ping() -> ResponseReturnValue:
        return jsonify(hits=client.incr(COUNTER))

    def standing(token: str) -> ResponseReturnValue:
        position, length = line(keys=[LINE], args=[token, 1])  # ties order by token
        return jsonify(token=token, position=position, waiting=length)

    @app.post("/line")
    def join() -> ResponseReturnValue:
        return standing(secrets.token_urlsafe(18))

    @app.get("/line/<token>")
    def check_in(token: str) -> ResponseReturnValue:
        return standing(token)

    return app
