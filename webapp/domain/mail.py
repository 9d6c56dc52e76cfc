"""What every process knows about email: the mailer's settings (read from the app's one
settings table, ``webapp.config``), and whether mail can be sent at all: the mailer
checks its SMTP server and keeps the answer in Redis for a while (``MailHealth``), so
the pages promise an email only when one can go, and the panel says when none can.
No Flask here."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from redis.exceptions import RedisError

from webapp.redis.keys import Keys

CACHED = 5.0  # seconds a process trusts what it read of the mailer's last check


@dataclass(frozen=True)
class MailSettings:
    """The mailer's settings; ``from_config`` reads them from the app's settings."""

    secret: str
    public_url: str
    mail_from: str
    smtp_host: str
    smtp_port: int
    smtp_username: str
    smtp_password: str
    smtp_starttls: bool
    lease: float  # seconds a 'sending' marker holds a notice for its worker
    attempts: int  # tries before a notice is 'failed'
    backoff: float  # seconds before the second try; doubles each time
    poll: float  # seconds between rounds when there was nothing to send
    check: float  # seconds between checks that the SMTP server answers

    @classmethod
    def from_config(cls, config: Mapping[str, Any], **changes: Any) -> MailSettings:
        settings = cls(
            secret=str(config["SECRET_KEY"]),
            public_url=str(config["PUBLIC_URL"]),
            mail_from=str(config["MAIL_FROM"]),
            smtp_host=str(config["SMTP_HOST"]),
            smtp_port=int(config["SMTP_PORT"]),
            smtp_username=str(config["SMTP_USERNAME"] or ""),
            smtp_password=str(config["SMTP_PASSWORD"] or ""),
            smtp_starttls=bool(config["SMTP_STARTTLS"]),
            lease=float(config["MAIL_LEASE_SECONDS"]),
            attempts=int(config["MAIL_ATTEMPTS"]),
            backoff=float(config["MAIL_BACKOFF_SECONDS"]),
            poll=float(config["MAIL_POLL_SECONDS"]),
            check=float(config["MAIL_CHECK_SECONDS"]),
        )
        return settings.changed(**changes) if changes else settings

    def changed(self, **changes: Any) -> MailSettings:
        return type(self)(**{**self.__dict__, **changes})

    @property
    def server(self) -> str:
        return f"{self.smtp_host}:{self.smtp_port}"


def idempotency_key(room: str, entry: str, kind: str) -> str:
    return f"{room}:{entry}:{kind}"


def message_id(key: str, mail_from: str) -> str:
    """The same Message-ID for every try of one notice, so a duplicate is recognisable."""
    domain = mail_from.rpartition("@")[2] or "localhost"
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@{domain}>"


class SmtpHealth(NamedTuple):
    """The mailer's last check of its SMTP server."""

    ok: bool
    server: str  # host:port
    error: str  # why mail cannot be sent ('' when it can)
    at: float


class MailHealth:
    """Whether mail can be sent, as the mailer last found (thread-safe)."""

    def __init__(
        self, client: Any, keys: Keys, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.key = keys.mail_health
        self.monotonic = monotonic
        self._read: tuple[float, SmtpHealth | None] | None = None
        self._lock = threading.Lock()

    def record(self, health: SmtpHealth, ttl: float) -> None:
        """Keeps the mailer's finding for ``ttl`` seconds: a mailer that stopped checking
        stops vouching for mail."""
        self.client.set(self.key, json.dumps(health._asdict()), px=max(int(ttl * 1000), 1))

    def read(self) -> SmtpHealth | None:
        """The last finding of a mailer that checks (None: no mailer checked lately)."""
        raw = self.client.get(self.key)
        if not raw:
            return None
        try:
            found = json.loads(raw)
            return SmtpHealth(bool(found["ok"]), str(found["server"]), str(found["error"]),
                              float(found["at"]))  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None

    def sendable(self) -> bool:
        """Whether a page may promise an email: a mailer runs and its SMTP server
        answers. Read at most every few seconds per process (pages poll)."""
        now = self.monotonic()
        with self._lock:
            kept = self._read
        if kept is None or now - kept[0] >= CACHED:
            try:
                kept = (now, self.read())
            except RedisError:  # the page says what it can without it
                kept = (now, None)
            with self._lock:
                self._read = kept
        return kept[1] is not None and kept[1].ok
