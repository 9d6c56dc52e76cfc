"""The passes of site rooms' seats, held to one holder each (issue 29). No Flask here.

- **One holder per pass.** Each seat remembers the pass it handed out last
  (``pass_issue.lua``). The ticket's holder (the room's page, the API, which hold the
  ticket itself) may always be handed a new one; a renewal at the gate, which has only
  the pass, rotates it only if it is that last one (``room_renew.lua``: with the seat's
  check-in, one call). So a copied pass works for one
  holder past the next renewal, however many copies exist: the first to renew gets the
  new pass, every other copy a 401.
- **Revocation within a second, on every process.** A fresh pass is checked without
  Redis (``Passes.verify``), so a seat that ends (a release, a removal, a leave) would
  still pass the gate for up to ``pass_renew_seconds``. Ending a seat of a site room
  publishes its revocation on the hub; every process keeps the revoked seats in memory
  until their last pass has expired, and the gate refuses them. A process that starts
  later reads the revocations still in force from Redis first.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from webapp.domain.identity import customer_of
from webapp.domain.passes import CLOCK_SKEW, Pass, Passes
from webapp.redis.keys import Keys
from webapp.redis.replies import text
from webapp.redis.scripts import Scripts

log = logging.getLogger(__name__)
TOPIC = "passes:revoked"  # the hub topic every process hears revocations on
ROOM = "*"  # the subject that revokes every pass of a room (it was deleted)
LONGEST = 2 * 3600 + CLOCK_SKEW  # seconds a revocation lasts at most (the longest pass)
PRUNE_AT = 10_000  # revocations a process keeps before it forgets the expired ones


class SeatPasses:
    """Hands out and rotates the passes of seats (one holder each)."""

    def __init__(self, passes: Passes, keys: Keys, scripts: Scripts) -> None:
        self.passes = passes
        self.keys = keys
        self.scripts = scripts

    def hand(self, room: str, token: str, renew_seconds: int, now: float) -> str | None:
        """A fresh pass for the holder of ``token`` (the ticket itself), which becomes
        the seat's one pass; None if the ticket has ended."""
        jti = secrets.token_urlsafe(12)
        code, identity = self._record(room, token, jti, "")
        if code != "ok":
            return None
        uid = customer_of(identity)
        return self.passes.issue(room, token, renew_seconds, now, jti, uid)

    def renewed(self, room: str, held: Pass, renew_seconds: int, now: float,
                renew: Callable[[str, str], str | None]) -> str | None:  # fmt: skip
        """The next pass for ``held``, presented for renewal, whose seat ``renew(jti,
        presented jti)`` rotates to the new pass in the same call as its check-in
        (``Visits.renew_pass``) and answers with the ticket's identity; None (nothing
        changed) if ``held`` is not the seat's last pass or its seat ended."""
        jti = secrets.token_urlsafe(12)
        identity = renew(jti, held.jti)
        if identity is None:
            return None
        return self.passes.issue(room, held.token, renew_seconds, now, jti, customer_of(identity))

    def _record(self, room: str, token: str, jti: str, presented: str) -> tuple[str, str]:
        """The script's code, and the ticket's identity (a site's customer: ``sub:``)."""
        keys = self.keys.room(room).named()
        code, identity = self.scripts["pass_issue"](keys=keys, args=[token, jti, presented])
        return text(code), text(identity)


class Revocation(NamedTuple):
    """Passes issued up to ``at`` are refused until ``until``."""

    at: float
    until: float


class Revocations:
    """The seats of site rooms that ended lately, as every process hears of them: their
    passes are refused by the gate until they would have expired anyway. A revocation
    refuses the passes issued before it (their ``ims``): a room deleted and made again
    under its name lets its new visitors through."""

    def __init__(self, client: Any, keys: Keys, hub: Any, clock: Callable[[], float]) -> None:
        self.client = client
        self.key = keys.revoked_passes
        self.hub = hub
        self.clock = clock
        self._found: dict[tuple[str, str], Revocation] = {}
        self._lock = threading.Lock()

    def revoke(self, room: str, subject: str, renew_seconds: int, now: float) -> None:
        """Every pass of the seat ``subject`` (its public id) of ``room`` issued until
        now is refused until the last one it could hold expires; every process hears
        it."""
        until = now + 2 * renew_seconds + CLOCK_SKEW
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(self.key, {f"{room} {subject} {now!r}": until})
        pipe.zremrangebyscore(self.key, "-inf", now)  # the bound: only those in force
        pipe.execute()
        message = {"room": room, "sub": subject, "at": now, "until": until}
        self.hub.publish(TOPIC, message)
        self._heard(message)

    def revoked(self, room: str, held: Pass, now: float) -> bool:
        """Whether ``held`` is refused: its seat ended, or its room was deleted
        (``ROOM``), after it was issued. No Redis: this process's memory."""
        for subject in (held.subject, ROOM):
            found = self._found.get((room, subject))
            if found is not None and now < found.until and held.issued_ms <= found.at * 1000:
                return True
        return False

    def start(self) -> None:
        """Hears revocations from every process, and reads those still in force each
        time the hub (re)subscribes (at start, after an outage): none is missed."""
        self.hub.when_ready(self._read)
        self.hub.subscribe(TOPIC, self._heard)

    def _read(self) -> None:
        now = self.clock()
        for member, until in self.client.zrangebyscore(self.key, now, "+inf", withscores=True):
            room, subject, at = text(member).split(" ")
            self._heard({"room": room, "sub": subject, "at": at, "until": until})

    def _heard(self, message: dict[str, Any]) -> None:
        try:
            key = (str(message["room"]), str(message["sub"]))
            heard = Revocation(float(message["at"]), float(message["until"]))
        except (KeyError, TypeError, ValueError):
            log.warning("ignored a malformed pass revocation: %r", message)
            return
        with self._lock:
            known = self._found.get(key)
            if known is None or heard.at > known.at:
                self._found[key] = heard
            if len(self._found) > PRUNE_AT:  # a bound: forget those surely expired (a
                # revocation lasts at most LONGEST, so one that ends that much before
                # this one's end has ended)
                kept = heard.until - LONGEST
                self._found = {k: v for k, v in self._found.items() if v.until > kept}
