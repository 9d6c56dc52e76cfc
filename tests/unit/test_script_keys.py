"""Keys by name (issue 33): every Lua script declares the keys it uses (``--!keys``),
reads each by its name, and the Python side passes them from that declaration."""

from __future__ import annotations

from importlib import resources

import pytest

from tests.unit.test_scripts import reader
from webapp.redis.keys import Keys
from webapp.redis.scripts import (
    ScriptError,
    Scripts,
    _read,
    assemble_script,
    assembled,
    lua_name,
    split_header,
)

FILES = sorted(
    path.name.removesuffix(".lua")
    for path in resources.files("webapp").joinpath("lua").iterdir()
    if path.name.endswith(".lua")
)
LIBRARIES = {included for name in FILES for included in split_header(_read(name)).includes}
SCRIPTS = [name for name in FILES if name not in LIBRARIES]

# Keys a script takes beyond a room's, a drop's, a waitlist's and a chat's families,
# each with the method of Keys that builds it
SINGLE = {
    "admit_request": "admit_request",
    "stock_request": "stock_request",
    "site_keys": "site_keys",
    "deliveries": "deliveries",
    "send_rate": "send_rate",
    "counts": "user_connections",
    "deadlines": "user_connection_deadlines",
    "link_used": "move_used",
    "holder": "move_holder",
    "holders": "move_holder",
    "prequeue_address": "prequeue_entries",
    "prequeue_network": "prequeue_entries",
    "wl_claimed": "claims",
    "limits": "join_limit",
}


def known_names() -> set[str]:
    keys = Keys("t")
    families = [keys.room("r"), keys.drop("r"), keys.waitlist("r"), keys.chat("c"), keys.hook("e")]
    return {name for family in families for name in family.named()} | set(SINGLE)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_declares_its_keys_by_known_names(name):
    """Each script (with its libraries) binds only keys the Python side builds by those
    names, and uses every key it declares: a script takes no key it has no use for."""
    script = assembled(name)
    declared = [*script.keys, *([script.rest] if script.rest else [])]
    assert set(declared) <= known_names(), f"{name}: names Keys does not build"
    body = script.text.split("\n", len(script.keys) + bool(script.rest))[-1]
    for key in declared:
        assert lua_name(key) in body, f"{name} declares {key} and never uses it"
    assert all(hasattr(Keys, method) for method in SINGLE.values())


def test_a_script_that_reads_an_undeclared_key_fails_to_load():
    """A name the script did not declare is an error naming it, before Redis sees it."""
    files = {"lib": "--!keys line\nLIB(K_LINE)", "main": "--!include lib.lua\nX(K_SEATS)"}
    with pytest.raises(ScriptError, match="K_SEATS"):
        assemble_script("main", reader(files))


def test_a_script_that_reads_a_key_by_number_fails_to_load():
    files = {"main": "--!keys line\nredis.call('GET', KEYS[1], K_LINE)"}
    with pytest.raises(ScriptError, match="by number"):
        assemble_script("main", reader(files))


def test_the_binding_puts_libraries_keys_first_each_once_and_the_rest_last():
    files = {
        "base": "--!keys settings line\nB(K_SETTINGS, K_LINE)",
        "lib": "--!include base.lua\n--!keys line seats\nL(K_SEATS)",
        "main": "--!include lib.lua\n--!keys admit_request limits...\nM(K_ADMIT_REQUEST, K_LIMITS)",
    }
    script = assemble_script("main", reader(files))
    assert script.keys == ("settings", "line", "seats", "admit_request")
    assert script.rest == "limits"
    assert script.text.split("\n")[:5] == [
        "local K_SETTINGS = KEYS[1]",
        "local K_LINE = KEYS[2]",
        "local K_SEATS = KEYS[3]",
        "local K_ADMIT_REQUEST = KEYS[4]",
        "local K_LIMITS = {unpack(KEYS, 5)}",
    ]


def test_only_a_script_takes_the_rest():
    files = {"lib": "--!keys limits...\nL(K_LIMITS)", "main": "--!include lib.lua\nM()"}
    with pytest.raises(ScriptError, match="only a script"):
        assemble_script("main", reader(files))


def test_a_call_without_a_declared_key_names_it(r):
    """Python passes keys by name: one the script declares and the caller forgot is a
    clear error, not a script reading the wrong key."""
    with pytest.raises(ScriptError, match="predictions"):
        Scripts(r)["room_predict"](keys={"line": "t:{r}:line"}, args=[60])
