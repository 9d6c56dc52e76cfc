"""Probes for load balancers and orchestrators.

``/healthz``: this process is up and serving (no Redis involved), so a broken app can
be told from a broken Redis. ``/readyz``: a Lua round trip on the app's Redis; 503 with
the reason while Redis is unreachable, frozen (the client's timeouts bound the wait),
or not answering as it should.
"""

from __future__ import annotations

import secrets

from flask import Blueprint, jsonify
from flask.typing import ResponseReturnValue
from redis.exceptions import RedisError

from webapp.views import services

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> ResponseReturnValue:
    scripts = services().scripts
    nonce = secrets.token_hex(8)
    try:
        reply = scripts["health"](args=[nonce])
    except RedisError as error:
        reason = f"Redis is unreachable: {type(error).__name__}: {error}"
        return jsonify(status="unavailable", reason=reason), 503, {"Retry-After": "5"}
    if not reply or reply[0] != nonce:
        reason = "Redis answered the probe wrongly"
        return jsonify(status="unavailable", reason=reason), 503, {"Retry-After": "5"}
    return jsonify(status="ok")
