"""The accounts of the admin control panel and their logged-in sessions; no Flask.

Accounts are one hash, name -> argon2id hash of the password. A session is one string
per login, named by the SHA-256 of a random 32-byte token that only the admin's
browser holds (so a copy of the keys logs nobody in), with the idle timeout as its TTL,
renewed by every request that reads it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from typing import Any, TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from webapp.redis.keys import Keys

T = TypeVar("T")


def _call(work: Callable[[], T]) -> T:
    return work()


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_PASSWORD = 12
MAX_PASSWORD = 1024  # argon2 takes any length; a bound keeps a login's work bounded
HASHER = PasswordHasher()  # argon2id with the library's current recommended costs
ENSURE_LOCK_MS = 30_000  # the most one process's setting of a password may take
ENSURE_POLL = 0.05  # seconds between the other processes' looks at whether it is done


def _matches(hasher: PasswordHasher, stored: str, password: str) -> bool:
    try:
        return bool(hasher.verify(stored, password))
    except (VerificationError, InvalidHashError):
        return False


class InvalidAccount(ValueError):
    """A name or password the accounts refuse; the message is for people."""


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InvalidAccount(
            "a name is 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a "
            "letter or digit"
        )
    return name


def check_password(password: str) -> str:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise InvalidAccount(
            f"a password is {MIN_PASSWORD} to {MAX_PASSWORD} characters long "
            f"(this one has {len(password)})"
        )
    return password


class Admins:
    """Admin accounts: names and argon2 password hashes in one Redis hash."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        hasher: PasswordHasher | None = None,
        hashing: Callable[[Callable[[], Any]], Any] = _call,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.key = keys.admins
        self.ensure_lock = keys.admins_ensure
        self.hasher = hasher or HASHER
        self.hashing = hashing  # how hashing work is run (off the event loop, say)
        self.sleep = sleep  # while another process sets the start's password

    def add(self, name: str, password: str) -> bool:
        """Adds the account, or replaces its password; True when it is new."""
        password = check_password(password)
        digest: str = self.hashing(lambda: self.hasher.hash(password))
        return bool(self.client.hset(self.key, check_name(name), digest))

    def remove(self, name: str) -> bool:
        return bool(self.client.hdel(self.key, name))

    def names(self) -> list[str]:
        return sorted(self.client.hkeys(self.key))

    def any(self) -> bool:
        """Whether at least one account exists (else there is no panel at all)."""
        return bool(self.client.exists(self.key))

    def verify(self, name: str, password: str) -> bool:
        """Whether ``password`` is the account's. An unknown name costs the same work
        (a dummy hash is verified), so timing does not tell which names exist."""
        plausible = len(name) <= 64 and len(password) <= MAX_PASSWORD
        stored = self.client.hget(self.key, name) if plausible else None
        against, attempt = stored or self._dummy, password if plausible else ""
        # A refusal is an answer, not an error: raised inside the hashing thread, it was
        # printed as a traceback there (gevent's thread pool reports what its tasks raise)
        if not self.hashing(lambda: _matches(self.hasher, against, attempt)) or stored is None:
            return False
        if self.hasher.check_needs_rehash(stored):  # the costs were raised since
            self.client.hset(self.key, name, self.hashing(lambda: self.hasher.hash(password)))
        return True

    def ensure(self, name: str, password: str) -> bool:
        """Makes ``password`` the account's unless it already is; True when written.
        Processes that start together (gunicorn's workers) leave it to the first: the
        others wait until it is done (at most the lock's life) and return False, so it
        is set once and no process serves the panel's "no account yet" 404 meanwhile
        (a newcomer opening /admin just after ``make run`` got one for 3 s)."""
        if not self.client.set(self.ensure_lock, "1", nx=True, px=ENSURE_LOCK_MS):
            waited = 0.0
            while self.client.exists(self.ensure_lock) and waited < ENSURE_LOCK_MS / 1000:
                self.sleep(ENSURE_POLL)
                waited += ENSURE_POLL
            return False
        try:
            if self.verify(name, password):
                return False
            self.add(name, password)
            return True
        finally:
            self.client.delete(self.ensure_lock)

    def stamp(self, name: str) -> str | None:
        """A short fingerprint of the account's password hash, None without the account:
        a session that recorded another one belongs to a removed or changed account."""
        stored = self.client.hget(self.key, name)
        return None if stored is None else hashlib.sha256(stored.encode()).hexdigest()[:16]

    @functools.cached_property
    def _dummy(self) -> str:
        # Made on first use, with this hasher's costs, so it takes as long as a real one
        return self.hasher.hash(secrets.token_urlsafe(16))


class AdminSessions:
    """Logged-in panel sessions: a JSON object per session with an idle TTL."""

    def __init__(self, client: Any, keys: Keys, idle_seconds: int) -> None:
        self.client = client
        self.keys = keys
        self.idle = idle_seconds

    def start(self, data: dict[str, Any]) -> str:
        """Stores a new session; returns its token (the cookie's value)."""
        token = secrets.token_urlsafe(32)
        self.client.set(self._key(token), json.dumps(data), ex=self.idle, nx=True)
        return token

    def resume(self, token: str) -> dict[str, Any] | None:
        """The session's data, its idle timeout restarted; None if it ended or expired."""
        if len(token) > 64:
            return None
        raw = self.client.getex(self._key(token), ex=self.idle)
        data = json.loads(raw) if raw else None
        return data if isinstance(data, dict) else None

    def save(self, token: str, data: dict[str, Any]) -> None:
        """Rewrites a live session's data (never brings an ended one back)."""
        self.client.set(self._key(token), json.dumps(data), ex=self.idle, xx=True)

    def end(self, token: str) -> None:
        self.client.delete(self._key(token))

    def _key(self, token: str) -> str:
        return self.keys.admin_session(hashlib.sha256(token.encode()).hexdigest())
