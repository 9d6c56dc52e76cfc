"""Continue on another device: a signed, single-use link that moves a place in line to
another browser.

The link carries the room, the ticket and the visitor's identity, signed with the app's
secret (itsdangerous, its own salt) and valid ``LIFETIME`` seconds. Taking it runs one
script (``place_move.lua``): the link's id is marked used (SET NX, so a second try is
refused) and the ticket's holder becomes the new browser. A browser whose own id is not
the holder's has been moved away from: its pages say so. The ticket and its API token
stay what they were, so the place in line is kept. The taking browser keeps its own
visitor id: the link moves the one place it names, never the giver's places in other
rooms (issue 25).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from itsdangerous.timed import TimestampSigner

from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

LIFETIME = 600  # seconds a link can be taken
HOLDER_TTL = 86400  # seconds the new holder is remembered (longer than any stay)
SALT = "webapp.move-place"


class MoveRefused(Exception):
    """The link cannot be taken; ``reason`` is "expired", "invalid" or "used"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Moved(NamedTuple):
    room: str
    token: str
    identity: str  # the visitor id the ticket was joined with
    holder: str  # the id of the browser that holds it now


class Moves:
    def __init__(
        self,
        client: Any,
        keys: Keys,
        scripts: Scripts,
        secret: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client, self.keys, self.scripts = client, keys, scripts
        self.clock = clock
        outer = self

        class _Signer(TimestampSigner):  # itsdangerous reads the time; this is ours
            def get_timestamp(self) -> int:
                return int(outer.clock())

        self._serializer = URLSafeTimedSerializer(secret, salt=SALT, signer=_Signer)

    def offer(self, room: str, token: str, identity: str) -> str:
        """A new link's signed text, for this ticket."""
        return str(self._serializer.dumps([room, token, identity, secrets.token_urlsafe(9)]))

    def peek(self, link: str) -> tuple[str, str, str, str]:
        """The link's room, ticket, identity and id; MoveRefused if expired or tampered."""
        try:
            room, token, identity, link_id = self._serializer.loads(link, max_age=LIFETIME)
        except SignatureExpired as error:
            raise MoveRefused("expired") from error
        except (BadSignature, ValueError, TypeError) as error:
            raise MoveRefused("invalid") from error
        return str(room), str(token), str(identity), str(link_id)

    def take(self, link: str) -> Moved:
        """Takes the link for a new browser (a new holder id), once."""
        room, token, identity, link_id = self.peek(link)
        holder = secrets.token_urlsafe(12)
        keys = {
            "link_used": self.keys.move_used(room, link_id),
            "holder": self.keys.move_holder(room, token),
        }
        if not self.scripts["place_move"](keys=keys, args=[LIFETIME, HOLDER_TTL, holder]):
            raise MoveRefused("used")
        return Moved(room, token, identity, holder)

    def moved_away(self, room: str, token: str, holder: str | None) -> bool:
        """True if this ticket was moved to a browser other than ``holder``."""
        now = self.client.get(self.keys.move_holder(room, token))
        if now is None:
            return False
        text = now.decode() if isinstance(now, bytes) else str(now)
        return text != holder
