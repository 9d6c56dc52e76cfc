"""Proof of work on join (issues 25 and 29): ALTCHA's v2 challenges, made and verified
by the ``altcha`` library. A try is a key derivation, PBKDF2 with HMAC-SHA-256 of
``ITERATIONS`` rounds, of the challenge's nonce followed by a counter (four bytes, big
endian) with its salt; the challenge is the one counter, at most ``challenge_cost``,
whose key starts with the challenge's ``keyPrefix`` (half of the key). The server picks
that counter at random and derives its key once when it makes the challenge (ALTCHA's
deterministic mode), so a browser tries half of ``challenge_cost`` counters on average
and never more than all of them. A browser runs PBKDF2 inside WebCrypto
(``crypto.subtle.deriveBits``), as native code: a native solver gains little on it per
try, unlike the SHA-256 challenges of v1 (one digest per try, where the call into
WebCrypto costs more than the digest). No Flask here.

A challenge's parameters are signed with a key derived from the app's secret, bound to
its room and with its expiry (``data``: ``room``, ``expires``, ``LIFETIME`` seconds on,
by this module's clock, so tests control time), and carry the derived key's HMAC
(``keySignature``, under a second key) so that a solution is verified by two HMACs,
with no key derivation. A solution counts once: ``redeem`` marks it used in Redis
(``Keys.challenge_used``, SET NX) until the challenge would have expired, so a solved
challenge cannot let a swarm in twice.

Whether a room asks for one (``needed``): its ``challenge`` setting is ``on``, or
``auto`` while more than ``challenge_threshold`` joined in the last minute (the room's
per-minute history: this minute's joins and the part of the last minute's still inside
the sixty seconds).

How much work it asks (``cost``): ``challenge_cost`` when ``on``; under ``auto`` that
times the last minute's joins over the threshold, at most ``AUTO_MOST`` times: a swarm
that pushes the rate up pays for each place in proportion to its own rate, so its CPU
per minute grows as the square of the places it takes, while people joining at a quiet
moment solve the base puzzle (docs/operations.md, "A swarm against people").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from typing import Any, Final, Protocol

from altcha import Payload, create_challenge, verify_solution

from webapp.domain.settings import RoomSettings
from webapp.redis.keys import Keys

LIFETIME = 300  # seconds a challenge can be solved and used
MAX_PAYLOAD = 2048  # characters of a solution's payload that are read at all
ALGORITHM: Final = "PBKDF2/SHA-256"
# PBKDF2's rounds in one try: enough that WebCrypto's cost per call (some 0.02 ms in
# Chromium) is a small part of a try, few enough that making a challenge (one
# derivation, on the server) costs about a millisecond (docs/operations.md)
ITERATIONS: Final = 2_000
AUTO_MOST = 16  # under auto, the work asked at most, in times the room's challenge_cost


class PuzzleTally(Protocol):
    """Who hears of puzzles made and solved (``webapp.web.metrics``; the domain imports no
    metrics library)."""

    def puzzle_issued(self, room: str, cost: int) -> None: ...

    def puzzle_solved(self, room: str, tries: int) -> None: ...


class Challenges:
    def __init__(
        self,
        client: Any,
        keys: Keys,
        secret: str | bytes,
        clock: Callable[[], float],
        tally: PuzzleTally | None = None,
    ):
        self.client, self.keys, self.clock, self.tally = client, keys, clock, tally
        raw = secret.encode() if isinstance(secret, str) else secret
        # Keys of their own: a challenge's signatures say nothing about the app's secret
        self._key = hmac.new(raw, b"webapp.altcha", hashlib.sha256).hexdigest()
        self._solution_key = hmac.new(raw, b"webapp.altcha.key", hashlib.sha256).hexdigest()

    def needed(self, room: str, settings: RoomSettings) -> bool:
        """Whether a new join of ``room`` must carry a solved challenge now."""
        if settings.challenge == "on":
            return True
        if settings.challenge == "auto":
            return self.recent_joins(room) > settings.challenge_threshold
        return False

    def cost(self, room: str, settings: RoomSettings) -> int:
        """The work a challenge of ``room`` asks now (its largest number)."""
        base = settings.challenge_cost
        if settings.challenge != "auto":
            return base
        return scaled_cost(base, self.recent_joins(room), settings.challenge_threshold)

    def recent_joins(self, room: str) -> float:
        """Joins in the last sixty seconds, from the per-minute history (the earlier
        minute's counted for the part of it still inside the window)."""
        now = self.clock()
        minute = int(now // 60)
        history = self.keys.room(room).history
        this, last = self.client.hmget(history, [f"{minute}:joined", f"{minute - 1}:joined"])
        inside = 1.0 - (now - minute * 60) / 60
        return float(this or 0) + float(last or 0) * inside

    def issue(self, room: str, cost: int) -> dict[str, Any]:
        """A new challenge for ``room`` whose counter is at most ``cost``, as the browser's
        solver and the API take it: ALTCHA's ``parameters`` and ``signature``, and
        ``maxnumber``, the largest counter to try (not signed: it only tells a solver
        where to stop)."""
        expires = int(self.clock()) + LIFETIME
        made = create_challenge(
            ALGORITHM,
            ITERATIONS,
            counter=secrets.randbelow(cost + 1),
            data={"room": room, "expires": expires},
            hmac_secret=self._key,
            hmac_key_secret=self._solution_key,
        )
        if self.tally is not None:
            self.tally.puzzle_issued(room, cost)
        return {**made.to_dict(), "maxnumber": cost}

    def redeem(self, room: str, payload: object) -> bool:
        """Whether ``payload`` (the solver's base64 JSON) solves a challenge of this
        room that has not expired and was not used before; it is used from now on."""
        found = _decoded(payload)
        if found is None:
            return False
        try:
            solution = Payload.from_dict(found)
            verified = verify_solution(
                solution, self._key, hmac_key_secret=self._solution_key
            ).verified
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
            return False
        data = solution.challenge.parameters.data
        if not verified or not isinstance(data, dict):
            return False
        expires, now = data.get("expires"), self.clock()
        if data.get("room") != room or not isinstance(expires, int) or expires <= now:
            return False
        key = self.keys.challenge_used(room, str(solution.challenge.signature)[:128])
        fresh = bool(self.client.set(key, "1", nx=True, ex=max(int(expires - now) + 1, 1)))
        if fresh and self.tally is not None:  # the counter found: the tries it took, at most
            self.tally.puzzle_solved(room, int(getattr(solution.solution, "counter", 0) or 0))
        return fresh


def _decoded(payload: object) -> dict[str, Any] | None:
    """The payload's fields (``challenge``: ``parameters``, ``signature``; ``solution``:
    ``counter``, ``derivedKey``), or None for anything that is not one."""
    if not isinstance(payload, str) or not payload or len(payload) > MAX_PAYLOAD:
        return None
    try:
        found = json.loads(base64.b64decode(payload, validate=True))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(found, dict):
        return None
    challenge, solution = found.get("challenge"), found.get("solution")
    if not isinstance(challenge, dict) or not isinstance(solution, dict):
        return None
    if not isinstance(challenge.get("parameters"), dict):
        return None
    if not isinstance(challenge.get("signature"), str):
        return None
    counter = solution.get("counter")
    if not isinstance(counter, int) or isinstance(counter, bool):
        return None
    if not isinstance(solution.get("derivedKey"), str):
        return None
    return found


def scaled_cost(base: int, recent: float, threshold: int) -> int:
    """``base`` times the rate over the threshold, from 1 to ``AUTO_MOST`` times."""
    factor = min(max(recent / max(threshold, 1), 1.0), float(AUTO_MOST))
    return int(base * factor)
