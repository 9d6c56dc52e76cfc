"""Defaults, and how settings are read: each can be set from the environment as
``WEBAPP_<NAME>`` (Flask's ``from_prefixed_env``: values are parsed as JSON when they
can be, so ``WEBAPP_SWEEP_INTERVAL=0.5`` is a number), or by the mapping a test passes
to ``create_app``. Secrets are the exception: they are read as text, exactly as given.
``REDIS_URL`` (no prefix) names an external Redis."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, ClassVar

from flask import Config
from limits import parse_many

from webapp.domain.admins import MIN_PASSWORD
from webapp.domain.passes import PassKeys, new_private_pem
from webapp.redis.connection import redis_url
from webapp.web.trusted_proxies import trusted_networks

log = logging.getLogger(__name__)

# Never parsed: "1e3" or "null" is a password too
SECRETS = (
    "SECRET_KEY",
    "ADMIN_TOKEN",
    "ADMIN_PASSWORD",
    "SMTP_PASSWORD",
    "PASS_KEY",
    "PASS_KEY_PREVIOUS",
)
MIN_TOKEN_LENGTH = 16


class ConfigError(RuntimeError):
    """A setting the app refuses to start with."""


class Defaults:
    SECRET_KEY: str | None = None  # unset: a random key kept in DATA_DIR/secret_key
    ADMIN_TOKEN: str | None = None  # unset: no admin access at all
    # Creates (or resets) the panel account "admin" at start; unset: accounts come
    # from `flask --app webapp admin add NAME` alone
    ADMIN_PASSWORD: str | None = None
    ADMIN_SESSION_IDLE_SECONDS = 1800  # a panel login ends after this long unused
    REDIS_URL: str | None = None  # unset: an embedded redis-server under DATA_DIR
    REDIS_PREFIX = "wr"
    REDIS_SOCKET_TIMEOUT = 1.0  # seconds a Redis call may take before the app gives up
    REDIS_CONNECT_TIMEOUT = 0.5  # seconds to open a connection to Redis
    DATA_DIR = "var"
    PROXY_COUNT = 0  # reverse proxies in front whose X-Forwarded-* headers are trusted
    # ... from these peers alone (addresses, CIDR networks); unset: loopback only
    TRUSTED_PROXIES: str | None = None
    SWEEP_INTERVAL = 1.0  # seconds between background sweeps of every room (0 = off)
    STATS_REFRESH = 1.0  # seconds a process caches a room's statistics
    MAX_CONNECTIONS_PER_USER = 5  # open room websockets per visitor, across all servers
    CONNECTION_TTL = 30.0  # seconds a dead server's connections keep counting, at most
    CHAT_UPKEEP_SECONDS = 1.0  # acknowledge what sockets were sent; catch up lost wake-ups
    MAX_CONTENT_LENGTH = 16 * 1024  # bytes; larger request bodies get 413
    # ... but a room's settings (admin API PUT, the panel's page editor) carry a page
    # template of up to 64 KB, which JSON or a form may escape to three times that
    SETTINGS_MAX_CONTENT_LENGTH = 256 * 1024
    CLOCK = None  # tests inject a callable returning seconds; None = Redis TIME
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    SESSION_COOKIE_SECURE = False  # True behind HTTPS: also sends Strict-Transport-Security
    # Wrong admin credentials allowed per client address (flask-limiter's notation)
    ADMIN_FAILURE_LIMIT = "10 per 15 minutes"
    # Per-address limits (issue 25: a join's in webapp/domain/admission.py, the admin
    # login's in webapp/web/login_limits.py), in flask-limiter's notation
    JOIN_LIMIT = "20 per minute"  # joins and sign-ups per client address
    JOIN_NETWORK_LIMIT = "200 per minute"  # ... per /24 (IPv4) or /64 (IPv6)
    SIGNUP_LIMIT = "10 per hour"  # waitlist sign-ups per client address
    ADMIN_ACCOUNT_LIMIT = "10 per 15 minutes"  # wrong passwords per admin account name
    ADMIN_TOTAL_LIMIT = "100 per 15 minutes"  # wrong passwords in all
    METRICS_PUBLIC = False  # True: /metrics answers without the admin token
    # Browser pages and the room websocket (issue 3)
    WTF_CSRF_TIME_LIMIT = None  # the token lives as long as the session: a long wait is fine
    WS_BEAT_SECONDS = 5.0  # a live room socket renews its seat this often
    WS_REFRESH_SECONDS = 10.0  # safety net: resend the room's figures this often
    WS_ALLOWED_ORIGINS: tuple[str, ...] = ()  # extra origins allowed besides the page's own
    # Email: read by the mailer worker (`python -m webapp.workers.mailer`, docs/operations.md)
    PUBLIC_URL = "http://127.0.0.1:8000"  # the links' base in every email, the passes' iss
    # Site rooms' passes (docs/gate.md): an Ed25519 private key in PEM (unset: one made
    # and kept in DATA_DIR/pass_key.pem); the previous one, still published after a change
    PASS_KEY: str | None = None
    PASS_KEY_PREVIOUS: str | None = None
    PASS_COOKIE_DOMAIN: str | None = None  # the pass cookie's Domain (sibling hosts)
    MAIL_FROM = "waiting-room@localhost"
    SMTP_HOST = "127.0.0.1"
    SMTP_PORT = 25
    SMTP_USERNAME = ""
    SMTP_PASSWORD: str | None = None
    SMTP_STARTTLS = False
    MAIL_LEASE_SECONDS = 60.0  # a notice being sent is the sending worker's this long
    MAIL_ATTEMPTS = 8  # tries before a notice is given up on ('failed')
    MAIL_BACKOFF_SECONDS = 5.0  # before the second try; doubles with each try
    MAIL_POLL_SECONDS = 1.0  # between rounds when there was nothing to send
    MAIL_CHECK_SECONDS = 30.0  # how often the mailer checks that its SMTP server answers
    # The webhook worker (python -m webapp.workers.webhooks, docs/webhooks.md)
    WEBHOOK_LEASE_SECONDS = 30.0  # a delivery being sent is the sending worker's this long
    WEBHOOK_POLL_SECONDS = 0.05  # between rounds when there was nothing to do
    WEBHOOK_HOSTS = ""  # the hosts endpoints may name, comma-separated ("": any host)
    # The library reads frames up to 1 MiB whole, so that a frame over WS_MAX_FRAME_BYTES
    # gets its 1009 close frame, not a TCP reset (webapp/views/visitor/frame_budget.py)
    SOCK_SERVER_OPTIONS: ClassVar[dict[str, int]] = {
        "ping_interval": 15,
        "max_message_size": 1024 * 1024,
    }
    WS_MAX_FRAME_BYTES = 16384  # a room socket's frame, at most; larger: closed with 1009
    WS_FRAME_RATE = 20.0  # frames a second a room socket may send, on average
    WS_FRAME_BURST = 40  # ... and at once; beyond: an error frame, then closed with 1008


def settings(overrides: Mapping[str, Any] | None = None) -> Config:
    """The settings of a process other than the web app (the mailer, gunicorn's master),
    read exactly as ``create_app`` reads its own; ``resolve`` them before use."""
    config = Config(os.getcwd())
    load(config, overrides)
    return config


def resolve(config: MutableMapping[str, Any], start_redis: bool = True) -> None:
    """What every process of the app works out alike from its settings, so the web
    workers and the mailer never disagree: the data directory (made absolute), the
    secret key (without one, a random key kept in that directory) and where Redis is
    (``REDIS_URL``, else the embedded server of that directory; started unless
    ``start_redis`` is False, for a process that waits for the app's)."""
    data_dir = Path(config["DATA_DIR"]).resolve()
    config["DATA_DIR"] = str(data_dir)
    if not config["SECRET_KEY"]:
        config["SECRET_KEY"] = stored_secret(data_dir)
    if not config.get("PASS_KEY"):
        config["PASS_KEY"] = stored_secret(data_dir, "pass_key.pem", new_private_pem)
    try:  # refused at start, in words, rather than at the first pass
        PassKeys(config["PASS_KEY"], config.get("PASS_KEY_PREVIOUS"))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    config["REDIS_URL"] = redis_url(config["REDIS_URL"], data_dir, start=start_redis)


def stored_secret(
    data_dir: Path, name: str = "secret_key", make: Callable[[], str] | None = None
) -> str:
    """A random secret kept on disk, so every worker, the mailer and a restart sign
    alike (``make``: how to make one; a random text by default)."""
    path = data_dir / name
    data_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # Written aside, then linked into place: a racing worker never reads half a key.
        draft = data_dir / f".{name}.{os.getpid()}"
        draft.write_text(make() if make is not None else secrets.token_urlsafe(48))
        draft.chmod(0o600)
        try:
            os.link(draft, path)
            setting = "WEBAPP_PASS_KEY" if make is not None else "WEBAPP_SECRET_KEY"
            log.warning("%s is not set; made a random one, kept in %s", setting, path)
        except FileExistsError:
            pass  # another process made it first (and said so)
        draft.unlink()
    return path.read_text().strip()


def load(config: Config, overrides: Mapping[str, Any] | None = None) -> None:
    """Defaults, then the environment, then ``overrides``; refuses bad secrets."""
    config.from_object(Defaults)
    config.from_prefixed_env("WEBAPP")
    for name in SECRETS:
        raw = os.environ.get(f"WEBAPP_{name}")
        if raw is not None:
            config[name] = raw
    if overrides:
        config.update(overrides)
    check_secrets(config)
    check_limits(config)
    check_proxies(config)


JOIN_LIMITS = ("JOIN_LIMIT", "JOIN_NETWORK_LIMIT", "SIGNUP_LIMIT")  # one limit each
ADMIN_LIMITS = ("ADMIN_FAILURE_LIMIT", "ADMIN_ACCOUNT_LIMIT", "ADMIN_TOTAL_LIMIT")


def check_limits(config: MutableMapping[str, Any]) -> None:
    """Refuses, at start and in words, a limit that cannot be read ("20 per minute";
    an admin limit may list several, "10/minute;100/hour")."""
    for name in (*JOIN_LIMITS, *ADMIN_LIMITS):
        try:
            found = parse_many(str(config[name]))
        except ValueError:
            found = []
        if not found or (name in JOIN_LIMITS and len(found) > 1):
            raise ConfigError(
                f"WEBAPP_{name} is {config[name]!r}, which is not a limit; write one "
                "such as '20 per minute'"
            ) from None


def check_proxies(config: MutableMapping[str, Any]) -> None:
    """Refuses, at start and in words, trusted proxies that are not addresses."""
    try:
        trusted_networks(config["TRUSTED_PROXIES"])
    except ValueError as error:
        raise ConfigError(
            f"WEBAPP_TRUSTED_PROXIES is {config['TRUSTED_PROXIES']!r}: {error}; write "
            "addresses or networks separated by commas, such as '10.0.0.5, 10.1.0.0/16'"
        ) from None


def check_secrets(config: MutableMapping[str, Any]) -> None:
    for name in SECRETS:
        value = config.get(name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"WEBAPP_{name} must be text")
        if value == "":
            config[name] = None  # set but empty: the same as unset
    token = config.get("ADMIN_TOKEN")
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"WEBAPP_ADMIN_TOKEN is {len(token)} characters long; it must be at least "
            f"{MIN_TOKEN_LENGTH}. Make one with: "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    password = config.get("ADMIN_PASSWORD")
    if password is not None and len(password) < MIN_PASSWORD:
        raise ConfigError(
            f"WEBAPP_ADMIN_PASSWORD is {len(password)} characters long; it must be at "
            f"least {MIN_PASSWORD}"
        )
