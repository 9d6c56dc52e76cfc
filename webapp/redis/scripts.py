"""Loads the Lua scripts in ``webapp/lua`` and registers them on a Redis client.

A script whose first line is ``--!include other.lua`` gets that file's text in front of
it, so the room scripts share one set of rules (``room_lib.lua``) without copying it.
redis-py's ``Script`` runs them with EVALSHA and reloads them after a NOSCRIPT error.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from redis.commands.core import Script

INCLUDE = "--!include "


@cache
def source(name: str) -> str:
    """The full text of ``lua/<name>.lua`` with its include, if any, in front."""
    text = resources.files("webapp").joinpath("lua", f"{name}.lua").read_text("utf-8")
    first, _, rest = text.partition("\n")
    if first.startswith(INCLUDE):
        included = first.removeprefix(INCLUDE).strip().removesuffix(".lua")
        return source(included) + "\n" + rest
    return text


class Scripts:
    """The registered scripts of one client, by file name (without ``.lua``)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._scripts: dict[str, Script] = {}

    def __getitem__(self, name: str) -> Script:
        script = self._scripts.get(name)
        if script is None:
            script = self._client.register_script(source(name))
            self._scripts[name] = script
        return script
