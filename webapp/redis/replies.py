"""Reading what Redis answers: text (the client decodes replies, but a raw client or a
script's reply may still hand back bytes), and the JSON records a room keeps per ticket
and per waitlist entry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def texts(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {text(k): text(v) for k, v in raw.items()}


def record(raw: Any) -> dict[str, Any]:
    """A ticket's or entry's JSON record ({} if there is none). orjson: a room's state
    reads a thousand of them at a thousand seats."""
    if not raw:
        return {}
    found = orjson.loads(raw)
    return found if isinstance(found, dict) else {}
