"""Proof of work on join (issue 25): ALTCHA's challenges (the ``altcha`` library's v1:
find the number, at most ``challenge_cost``, whose SHA-256 with the challenge's salt is
the challenge). No Flask here.

A challenge is signed with a key derived from the app's secret, bound to its room (a
``room`` parameter in its salt) and expires in ``LIFETIME`` seconds (``expires``, also
in the salt, so neither can be changed without breaking the signature). A solution
counts once: ``redeem`` marks it used in Redis (``Keys.challenge_used``, SET NX) until
the challenge would have expired, so a solved challenge cannot let a swarm in twice.

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
import datetime
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any, Final

from altcha.v1 import ChallengeOptions, Payload, create_challenge, extract_params, verify_solution

from webapp.domain.settings import RoomSettings
from webapp.redis.keys import Keys

LIFETIME = 300  # seconds a challenge can be solved and used
MAX_PAYLOAD = 2048  # characters of a solution's payload that are read at all
ALGORITHM: Final = "SHA-256"
AUTO_MOST = 16  # under auto, the work asked at most, in times the room's challenge_cost


class Challenges:
    def __init__(self, client: Any, keys: Keys, secret: str | bytes, clock: Callable[[], float]):
        self.client, self.keys, self.clock = client, keys, clock
        raw = secret.encode() if isinstance(secret, str) else secret
        # A key of its own: a challenge's signature says nothing about the app's secret
        self._key = hmac.new(raw, b"webapp.altcha", hashlib.sha256).hexdigest()

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
        """A new challenge for ``room``, as the browser's solver and the API take it."""
        expires = datetime.datetime.fromtimestamp(self.clock() + LIFETIME, datetime.UTC)
        options = ChallengeOptions(
            algorithm=ALGORITHM,
            max_number=cost,
            salt_length=12,
            hmac_key=self._key,
            expires=expires,
            params={"room": room},
        )
        made = create_challenge(options)
        return {**made.to_dict(), "maxnumber": made.max_number}

    def redeem(self, room: str, payload: object) -> bool:
        """Whether ``payload`` (the solver's base64 JSON) solves a challenge of this
        room that has not expired and was not used before; it is used from now on."""
        found = _decoded(payload)
        if found is None:
            return False
        solution = Payload.from_dict(found)  # type: ignore[arg-type]
        verified, _error = verify_solution(solution, self._key, check_expires=False)
        if not verified:
            return False
        params = extract_params(solution.to_dict())
        try:
            expires = float(params.get("expires", ["0"])[0])
        except ValueError:
            return False
        now = self.clock()
        if params.get("room", [""])[0] != room or expires <= now:
            return False
        key = self.keys.challenge_used(room, str(found["challenge"])[:128])
        return bool(self.client.set(key, "1", nx=True, ex=max(int(expires - now) + 1, 1)))


def _decoded(payload: object) -> dict[str, Any] | None:
    """The payload's fields, or None for anything that is not one."""
    if not isinstance(payload, str) or not payload or len(payload) > MAX_PAYLOAD:
        return None
    try:
        found = json.loads(base64.b64decode(payload, validate=True))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    fields = ("algorithm", "challenge", "number", "salt", "signature")
    if not isinstance(found, dict) or not all(name in found for name in fields):
        return None
    if not isinstance(found["number"], int) or isinstance(found["number"], bool):
        return None
    if not all(isinstance(found[name], str) for name in fields if name != "number"):
        return None
    return found


def scaled_cost(base: int, recent: float, threshold: int) -> int:
    """``base`` times the rate over the threshold, from 1 to ``AUTO_MOST`` times."""
    factor = min(max(recent / max(threshold, 1), 1.0), float(AUTO_MOST))
    return int(base * factor)
