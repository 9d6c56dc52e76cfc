"""Flask's JSON through ``webapp.web.jsonio``: ``request.get_json`` and ``jsonify``."""

from __future__ import annotations

from typing import Any

from flask.json.provider import JSONProvider

from webapp.web import jsonio


class OrjsonProvider(JSONProvider):
    """Flask's ``request.get_json`` and ``jsonify`` through ``loads`` and ``dumps``."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return jsonio.dumps(obj)

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return jsonio.loads(s)
