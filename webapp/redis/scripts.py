"""Loads the Lua scripts in ``webapp/lua`` and registers them on a Redis client.

A file starts with its directives, one a line:

- ``--!include other.lua``: the loader puts that library in front of the file, the
  library's own includes first, and every library once however many files include it
  (in the order first included). So the room scripts share one set of rules
  (``room_lib.lua``, which includes ``room_base.lua`` and ``room_stats.lua``).
- ``--!keys name ...``: the Redis keys the file uses, by name (the names of
  ``webapp/redis/keys.py``: ``RoomKeys.named()`` and its siblings). A script's keys are
  its libraries' and its own, in that order, each once; the loader writes the one
  binding from names to positions in front of the text (``local K_LINE = KEYS[3]``),
  and Lua reads each key by its name (``K_LINE``), never by number. A last name ending
  in ``...`` takes the rest: ``K_<NAME>`` is then a list.

Python calls a script with its keys by name (a mapping, which may hold more than the
script needs); ``Script`` puts the ones it declared in order. A missing library, an
include cycle or a key the caller did not give is an error that names it, and
``tests/unit/test_script_keys.py`` checks every file: no ``KEYS[`` outside the
binding, no ``K_`` name the script did not declare, no declared key left unused.
redis-py's ``Script`` runs the result with EVALSHA and reloads it after NOSCRIPT.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from redis.commands.core import Script as RedisScript

INCLUDE = "--!include "
KEYS = "--!keys "
REST = "..."
KEY_NAME = re.compile(r"\bK_[A-Z0-9_]+\b")
BY_NUMBER = re.compile(r"\bKEYS\s*\[")


class ScriptError(RuntimeError):
    """A script that cannot be put together or called: a missing library, an include
    cycle, a key declared twice over or not given by the caller."""


@dataclass(frozen=True)
class Assembled:
    """A script put together: its text (the key binding first) and its keys' names, in
    the order of KEYS; ``rest`` names the list that takes every key after them."""

    text: str
    keys: tuple[str, ...]
    rest: str = ""


@dataclass(frozen=True)
class Header:
    """A file's directives and the text after them."""

    includes: tuple[str, ...]
    keys: tuple[str, ...]
    body: str


def _read(name: str) -> str:
    path = resources.files("webapp").joinpath("lua", f"{name}.lua")
    if not path.is_file():
        raise ScriptError(f"no Lua file lua/{name}.lua")
    return path.read_text("utf-8")


def lua_name(key: str) -> str:
    """The Lua local a key is bound to: ``line`` -> ``K_LINE``."""
    return "K_" + key.removesuffix(REST).upper()


def split_header(text: str) -> Header:
    """The libraries a file includes and the keys it declares (its leading directive
    lines, in order) and the rest of its text."""
    lines = text.split("\n")
    includes: list[str] = []
    keys: list[str] = []
    while lines and lines[0].startswith((INCLUDE, KEYS)):
        line = lines.pop(0)
        if line.startswith(INCLUDE):
            includes.append(line.removeprefix(INCLUDE).strip().removesuffix(".lua"))
        else:
            keys.extend(line.removeprefix(KEYS).split())
    return Header(tuple(includes), tuple(keys), "\n".join(lines))


def split_includes(text: str) -> tuple[list[str], str]:
    """The libraries a file includes and the rest of its text (its key declarations
    included)."""
    header = split_header(text)
    rest = "\n".join(KEYS + key for key in header.keys)
    return list(header.includes), (rest + "\n" + header.body) if rest else header.body


@cache
def assembled(name: str) -> Assembled:
    """``lua/<name>.lua`` put together (``assemble`` with the package's files)."""
    return assemble_script(name, _read)


def source(name: str) -> str:
    """The full text of ``lua/<name>.lua``: the key binding, then every library it
    includes, directly or not, each once, a library's own includes before it."""
    return assembled(name).text


def assemble(name: str, read: Callable[[str], str]) -> str:
    """``source`` of the file ``name``, with ``read(name)`` giving a file's own text."""
    return assemble_script(name, read).text


def assemble_script(name: str, read: Callable[[str], str]) -> Assembled:
    order: list[str] = []
    headers: dict[str, Header] = {}

    def visit(current: str, path: tuple[str, ...]) -> None:
        if current in path:
            raise ScriptError("Lua include cycle: " + " -> ".join((*path, current)))
        if current in headers:
            return
        header = split_header(read(current))
        for included in header.includes:
            visit(included, (*path, current))
        headers[current] = header
        order.append(current)

    visit(name, ())
    keys: list[str] = []
    rest = ""
    for part in order:
        for key in headers[part].keys:
            if rest:
                raise ScriptError(f"lua/{part}.lua: a key after the rest ({rest}{REST})")
            if key.endswith(REST):
                if part != name:
                    raise ScriptError(f"lua/{part}.lua: only a script takes the rest")
                rest = key.removesuffix(REST)
            elif key not in keys:
                keys.append(key)
    for part in order:
        check_keys(part, headers[part].body, [*keys, *([rest] if rest else [])])
    binding = [f"local {lua_name(key)} = KEYS[{i}]" for i, key in enumerate(keys, 1)]
    if rest:
        binding.append(f"local {lua_name(rest)} = {{unpack(KEYS, {len(keys) + 1})}}")
    text = "\n".join([*binding, *(headers[part].body for part in order)])
    return Assembled(text, tuple(keys), rest)


def check_keys(part: str, body: str, declared: Sequence[str]) -> None:
    """A file of a script reads only keys the script declared, each by its name."""
    if BY_NUMBER.search(body):
        raise ScriptError(f"lua/{part}.lua reads a key by number: declare it by name")
    names = {lua_name(key) for key in declared}
    unknown = sorted(set(KEY_NAME.findall(body)) - names)
    if unknown:
        raise ScriptError(f"lua/{part}.lua uses undeclared keys: {', '.join(unknown)}")


KeyMap = Mapping[str, "str | Sequence[str]"]


class Script:
    """One registered script: called with its keys by name."""

    def __init__(self, client: Any, name: str) -> None:
        self.name = name
        made = assembled(name)
        self.keys = made.keys
        self.rest = made.rest
        self.text = made.text
        self._script: RedisScript = client.register_script(made.text)

    def ordered(self, keys: KeyMap) -> list[str]:
        """The KEYS of a call: the keys it declared, in their order, from ``keys``."""
        try:
            found: list[Any] = [keys[key] for key in self.keys]
            if self.rest:
                found.extend(keys[self.rest])
        except KeyError as missing:
            raise ScriptError(f"lua/{self.name}.lua takes key {missing} by name") from None
        return found

    def __call__(
        self, keys: KeyMap | None = None, args: Sequence[Any] = (), client: Any = None
    ) -> Any:
        return self._script(keys=self.ordered(keys or {}), args=args, client=client)


class Scripts:
    """The registered scripts of one client, by file name (without ``.lua``)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._scripts: dict[str, Script] = {}

    def __getitem__(self, name: str) -> Script:
        script = self._scripts.get(name)
        if script is None:
            script = Script(self._client, name)
            self._scripts[name] = script
        return script
