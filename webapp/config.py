"""Defaults. Each can be set from the environment as ``WEBAPP_<NAME>`` (Flask's
``from_prefixed_env``: values are parsed as JSON when they can be), or by the mapping a
test passes to ``create_app``. ``REDIS_URL`` (no prefix) names an external Redis."""

from __future__ import annotations

from typing import ClassVar


class Defaults:
    SECRET_KEY: str | None = None  # unset: a random key kept in DATA_DIR/secret_key
    ADMIN_TOKEN: str | None = None  # unset: no admin access at all
    REDIS_URL: str | None = None  # unset: an embedded redis-server under DATA_DIR
    REDIS_PREFIX = "wr"
    DATA_DIR = "var"
    SWEEP_INTERVAL = 1.0  # seconds between background sweeps of every room (0 = off)
    STATS_REFRESH = 1.0  # seconds a process caches a room's statistics
    MAX_CONNECTIONS_PER_USER = 5  # open room websockets per visitor, across all servers
    CONNECTION_TTL = 30.0  # seconds a dead server's connections keep counting, at most
    CHAT_UPKEEP_SECONDS = 1.0  # acknowledge what sockets were sent; catch up lost wake-ups
    MAX_CONTENT_LENGTH = 16 * 1024  # bytes; larger request bodies get 413
    CLOCK = None  # tests inject a callable returning seconds; None = Redis TIME
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    # Browser pages and the room websocket (issue 3)
    WTF_CSRF_TIME_LIMIT = None  # the token lives as long as the session: a long wait is fine
    WS_BEAT_SECONDS = 5.0  # a live room socket renews its seat this often
    WS_REFRESH_SECONDS = 10.0  # safety net: resend the room's figures this often
    WS_ALLOWED_ORIGINS: tuple[str, ...] = ()  # extra origins allowed besides the page's own
    SOCK_SERVER_OPTIONS: ClassVar[dict[str, int]] = {"ping_interval": 15, "max_message_size": 16384}
