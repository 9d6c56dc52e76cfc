"""A request's JSON body, read for the API's views: the object itself, and a whole
number in it. Each refusal is an InvalidInput (a 400 that says what was wrong)."""

from __future__ import annotations

from typing import Any

from flask import request

from webapp.domain.refusals import InvalidInput


def json_object(required: bool, known: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request body as a JSON object; {} when absent and not required. With
    ``known``, the only properties it may have (the document's additionalProperties
    false): another is refused by name rather than ignored."""
    if not request.get_data(cache=True) and not required:
        return {}
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    unknown = [name for name in body if name not in known] if known else []
    if unknown:
        raise InvalidInput(f"unknown property {unknown[0][:40]!r}; known: {', '.join(known)}")
    return body


def whole_number(body: dict[str, Any], name: str, low: int, high: int, default: int) -> int:
    """A whole number from a JSON body (2.0 is the number 2, as in JSON Schema; true is
    not 1), else InvalidInput."""
    value = body.get(name, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{name} must be a whole number from {low} to {high}")
    return value
