"""A site room's site keys (issue 29): the credential of the room's site itself, which
its server sends to count stock (a release's ``sold``). A visitor's pass never counts
stock: the visitor holds it (a cookie, an API reply), so whoever holds one could sell
out a drop. No Flask here.

A key reads ``wrsk_<id>_<secret>``; Redis keeps only the SHA-256 of the whole key (a
key is 192 random bits, so a fast hash is enough: there is nothing to guess), beside
its label and when it was made, in one hash kept with the room. Several may be live at
once, so a site can move to a new key before the old one is revoked.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from typing import Any, NamedTuple

from webapp.domain.refusals import InvalidInput, RoomError, RoomNotFound
from webapp.redis.keys import Keys
from webapp.redis.replies import text, texts
from webapp.redis.scripts import Scripts

PREFIX = "wrsk_"
MAX_LIVE = 10  # live keys a room may have at once
MAX_LABEL = 80  # characters of a key's label
AUDIT_MAX = 10000  # entries a room's audit log keeps (about): room_base.lua's AUDIT_MAX
_KEY = re.compile(r"wrsk_([0-9a-f]{8})_[A-Za-z0-9_-]{32}")


class TooManySiteKeys(RoomError):
    """The room has ``MAX_LIVE`` site keys already: revoke one first."""


class SiteKeyNotFound(RoomError):
    """No live site key of that id in the room."""


class SiteKey(NamedTuple):
    """A live site key as the panel and the admin API list it (never the key itself)."""

    id: str
    label: str
    created: float


class NewSiteKey(NamedTuple):
    """A key just made: ``key`` is shown once, here, and never again."""

    id: str
    key: str
    label: str
    created: float


def looks_like_site_key(raw: str) -> bool:
    """``raw`` has a site key's shape (whether or not it is a live one)."""
    return raw.startswith(PREFIX)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class SiteKeys:
    """Makes, lists, revokes and checks the site keys of each room."""

    def __init__(self, client: Any, keys: Keys, scripts: Scripts) -> None:
        self.client = client
        self.keys = keys
        self.scripts = scripts

    def make(self, room: str, label: str, now: float, who: str) -> NewSiteKey:
        """A new live key of ``room``, audited as made by ``who`` (RoomNotFound;
        TooManySiteKeys at ``MAX_LIVE``)."""
        label = " ".join(label.split())
        if len(label) > MAX_LABEL:
            raise InvalidInput(f"a site key's label is at most {MAX_LABEL} characters")
        key_id = secrets.token_hex(4)
        key = f"{PREFIX}{key_id}_{secrets.token_urlsafe(24)}"
        record = json.dumps({"hash": _digest(key), "label": label, "created": now})
        room_keys = self.keys.room(room)
        reply = text(
            self.scripts["site_key_make"](
                keys={**room_keys.named(), "site_keys": self.keys.site_keys(room)},
                args=[key_id, record, MAX_LIVE, now, who, AUDIT_MAX, label],
            )
        )
        if reply == "no_room":
            raise RoomNotFound(f"no room named {room!r}")
        if reply == "too_many":
            raise TooManySiteKeys(
                f"this room has {MAX_LIVE} site keys already: revoke one before making another"
            )
        return NewSiteKey(key_id, key, label, now)

    def live(self, room: str) -> list[SiteKey]:
        """The room's live keys, oldest first."""
        found = []
        for key_id, raw in texts(self.client.hgetall(self.keys.site_keys(room))).items():
            record = json.loads(raw)
            found.append(SiteKey(key_id, str(record["label"]), float(record["created"])))
        return sorted(found, key=lambda k: (k.created, k.id))

    def revoke(self, room: str, key_id: str, now: float, who: str) -> bool:
        """Ends a key at once, audited as done by ``who``; False if the room has no live
        key of that id (nothing changed)."""
        return bool(
            self.scripts["site_key_revoke"](
                keys={"site_keys": self.keys.site_keys(room), "audit": self.keys.room(room).audit},
                args=[key_id, now, who, AUDIT_MAX],
            )
        )

    def check(self, room: str, presented: str) -> str | None:
        """The id of the live key of ``room`` that ``presented`` is, else None (compared
        in constant time)."""
        shape = _KEY.fullmatch(presented)
        if shape is None:
            return None
        raw = self.client.hget(self.keys.site_keys(room), shape.group(1))
        if raw is None:
            return None
        stored = str(json.loads(text(raw))["hash"])
        return shape.group(1) if hmac.compare_digest(stored, _digest(presented)) else None
