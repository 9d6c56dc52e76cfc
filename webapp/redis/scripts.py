"""Loads the Lua scripts in ``webapp/lua`` and registers them on a Redis client.

A script (or a library) may start with ``--!include other.lua`` lines, one library
each: the loader puts those files in front of it, each library's own includes first,
and every library once however many files include it (in the order first included).
So the room scripts share one set of rules (``room_lib.lua``, which includes
``room_base.lua`` and ``room_stats.lua``) without copying it. A missing library or an
include cycle is an error when the script is loaded. redis-py's ``Script`` runs the
result with EVALSHA and reloads it after a NOSCRIPT error.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from redis.commands.core import Script

INCLUDE = "--!include "


class ScriptError(RuntimeError):
    """A script that cannot be put together: a missing library or an include cycle."""


def _read(name: str) -> str:
    path = resources.files("webapp").joinpath("lua", f"{name}.lua")
    if not path.is_file():
        raise ScriptError(f"no Lua file lua/{name}.lua")
    return path.read_text("utf-8")


def split_includes(text: str) -> tuple[list[str], str]:
    """The libraries a file includes (its leading ``--!include`` lines, in order) and
    the rest of its text."""
    lines = text.split("\n")
    names = []
    while lines and lines[0].startswith(INCLUDE):
        names.append(lines.pop(0).removeprefix(INCLUDE).strip().removesuffix(".lua"))
    return names, "\n".join(lines)


@cache
def source(name: str) -> str:
    """The full text of ``lua/<name>.lua``: every library it includes, directly or not,
    in front of it, each once, a library's own includes before it."""
    return assemble(name, _read)


def assemble(name: str, read: Callable[[str], str]) -> str:
    """``source`` of the file ``name``, with ``read(name)`` giving a file's own text."""
    order: list[str] = []
    bodies: dict[str, str] = {}

    def visit(current: str, path: tuple[str, ...]) -> None:
        if current in path:
            raise ScriptError("Lua include cycle: " + " -> ".join((*path, current)))
        if current in bodies:
            return
        includes, body = split_includes(read(current))
        for included in includes:
            visit(included, (*path, current))
        bodies[current] = body
        order.append(current)

    visit(name, ())
    return "\n".join(bodies[part] for part in order)


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
