"""JSON in and out, for the API and the websocket alike (orjson); no Flask here, so the
lean paths use it too (Flask's own provider over it: ``webapp.web.flask_json``).

Parsing refuses what would hurt later instead of failing deep inside a view: text that
is not UTF-8 (a lone surrogate such as ``"\\ud800"``, which ``JSON.stringify`` makes of
broken text, could not be stored or sent on), numbers beyond a double, and nesting
deeper than ``MAX_DEPTH`` (no message of ours nests past three; a thousand levels used
to raise RecursionError). Each refusal is a ``ValueError`` that says what was wrong.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

MAX_DEPTH = 32


class BadJSON(ValueError):
    pass


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise BadJSON(f"not valid JSON: {error.msg}") from None
    if not _shallow(value, MAX_DEPTH):
        raise BadJSON(f"JSON nested more than {MAX_DEPTH} levels deep")
    return value


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # what orjson does not take (integers past 64 bits): the slow way
        return json.dumps(value, separators=(",", ":"))


def _shallow(value: Any, limit: int) -> bool:
    """Whether no array or object in ``value`` lies deeper than ``limit`` (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True
