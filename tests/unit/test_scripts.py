"""The Lua loader: a script's ``--!include`` lines put its libraries in front of it."""

from __future__ import annotations

import pytest

from webapp.redis.scripts import ScriptError, assemble, source


def reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    def read(name: str) -> str:
        if name not in files:
            raise ScriptError(f"no Lua file lua/{name}.lua")
        return files[name]

    return read


def test_several_includes_come_in_order_before_the_script():
    """Each included library comes before the script, in the order its lines name them."""
    files = {"a": "A", "b": "B", "main": "--!include a.lua\n--!include b.lua\nMAIN"}
    assert assemble("main", reader(files)).split("\n") == ["A", "B", "MAIN"]


def test_a_library_s_own_includes_come_before_it():
    """A library that includes another is preceded by it."""
    files = {"base": "BASE", "lib": "--!include base.lua\nLIB", "main": "--!include lib.lua\nMAIN"}
    assert assemble("main", reader(files)).split("\n") == ["BASE", "LIB", "MAIN"]


def test_a_library_included_twice_comes_once():
    """A library two others include appears once, where it was first needed."""
    files = {
        "base": "BASE",
        "stats": "--!include base.lua\nSTATS",
        "lib": "--!include base.lua\n--!include stats.lua\nLIB",
        "main": "--!include lib.lua\n--!include base.lua\nMAIN",
    }
    assert assemble("main", reader(files)).split("\n") == ["BASE", "STATS", "LIB", "MAIN"]


def test_a_missing_library_is_a_clear_error():
    """Including a file that does not exist names it."""
    with pytest.raises(ScriptError, match=r"lua/gone\.lua"):
        assemble("main", reader({"main": "--!include gone.lua\nMAIN"}))


def test_an_include_cycle_is_a_clear_error():
    """A library that includes itself, directly or not, names the cycle."""
    files = {"a": "--!include b.lua\nA", "b": "--!include a.lua\nB", "main": "--!include a.lua"}
    with pytest.raises(ScriptError, match="main -> a -> b -> a"):
        assemble("main", reader(files))


def test_only_leading_lines_include():
    """An include line after the file's start is plain Lua (a comment), not an include."""
    files = {"a": "A", "main": "MAIN\n--!include a.lua"}
    assert assemble("main", reader(files)) == "MAIN\n--!include a.lua"


def test_every_room_script_gets_each_library_once():
    """The real room scripts carry room_base, room_stats and room_lib once each, the
    code generator only where codes are made, and a waitlist script the waitlist library
    after them."""
    for name in ("room_join", "room_checkin", "room_admit", "waitlist_join"):
        text = source(name)
        for library in ("room_base.lua:", "room_stats.lua:", "room_lib.lua:"):
            assert text.count(f"-- {library}") == 1, (name, library)
        made = name in ("room_join", "room_admit", "waitlist_join")  # admit: waitlist_lib
        assert text.count("-- codes_lib.lua:") == made, name
        assert not [line for line in text.split("\n") if line.startswith("--!include")]
    assert source("waitlist_join").index("-- waitlist_lib.lua:") > source("waitlist_join").index(
        "-- room_lib.lua:"
    )
