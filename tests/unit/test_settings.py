"""The settings table: its free-text kind (title, description, claim_redirect_url), and
the dataclass and the admin form reading it."""

import json
from dataclasses import fields
from pathlib import Path
from typing import Literal, get_args, get_origin, get_type_hints

import pytest

import webapp
from webapp.domain.settings import (
    BY_NAME,
    DURATIONS,
    GROUPS,
    KINDS,
    SETTINGS,
    InvalidSetting,
    RoomSettings,
)


def test_text_settings_are_trimmed_and_default_empty():
    """A title is trimmed; '' is the empty default, and None no text at all (the API's
    document says a string: null is refused, not read as '')."""
    assert RoomSettings().title == ""
    assert BY_NAME["title"].check("  Keynote  ") == "Keynote"
    assert BY_NAME["title"].check("") == ""
    with pytest.raises(InvalidSetting, match="title must be a string"):
        BY_NAME["title"].check(None)
    assert BY_NAME["description"].from_text("Line one\r\nline two") == "Line one\nline two"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("title", "x" * 81),
        ("title", 5),
        ("title", "bell\x07"),
        ("title", "carriage\rreturn"),
        ("title", "  " + "x" * 79),
        ("description", "y" * 501),
        ("claim_redirect_url", "javascript:alert(1)"),
        ("claim_redirect_url", "https://"),
        ("claim_redirect_url", "ftp://example.com/"),
    ],
)
def test_bad_text_settings_are_refused(name, value):
    """Too long, not a string, control characters, or a link that is not http(s)."""
    with pytest.raises(InvalidSetting):
        BY_NAME[name].check(value)


def test_text_settings_round_trip_through_redis_form():
    """What is stored in the settings hash reads back the same."""
    settings = RoomSettings().changed(
        {"title": "Café ünïcode", "claim_redirect_url": "https://example.com/welcome?a=1"}
    )
    pairs = settings.to_redis()
    assert RoomSettings.from_redis(dict(zip(pairs[::2], pairs[1::2], strict=True))) == settings


def test_the_openapi_document_states_the_same_text_rules():
    """Each free-text setting's schema carries the pattern the validator uses."""
    document = json.loads((Path(webapp.__file__).parent / "openapi.json").read_text())
    schemas = document["components"]["schemas"]
    for schema in ("RoomSettingsChange", "Room", "RoomOverview"):
        properties = schemas[schema]["properties"]
        for setting in SETTINGS:
            if setting.text:
                expected = setting.pattern  # URL_PATTERN, MARKUP_PATTERN or TEXT_PATTERN
                assert properties[setting.name]["pattern"] == expected, (schema, setting.name)
                assert properties[setting.name]["maxLength"] == setting.text


def test_the_dataclass_and_the_table_agree():
    """RoomSettings has one field per row of SETTINGS, in the same order, each defaulting
    to the row's default, of a type that holds exactly the row's values."""
    assert [f.name for f in fields(RoomSettings)] == [s.name for s in SETTINGS]
    hints = get_type_hints(RoomSettings)
    defaults = RoomSettings()
    for setting in SETTINGS:
        assert getattr(defaults, setting.name) == setting.default, setting.name
        hint = hints[setting.name]
        if setting.choices:
            assert get_origin(hint) is Literal and get_args(hint) == setting.values, setting.name
        elif setting.text:
            assert hint is str, setting.name
        else:
            assert hint == (int | None if setting.nullable else int), setting.name
        assert setting.check(setting.default) == setting.default, setting.name


def test_every_setting_has_a_group_and_kinds_the_form_knows():
    """Each row names one of the form's groups and at least one kind of room; units a
    duration is offered in are known, and only for settings counted in time."""
    groups = {group for group, _ in GROUPS}
    for setting in SETTINGS:
        assert setting.group in groups and set(setting.kinds) <= set(KINDS) and setting.kinds
        assert set(setting.units) <= set(DURATIONS)
        assert not setting.units or setting.unit in DURATIONS, setting.name
