"""The admin panel's settings form, read from and written to the one table (``SETTINGS``):
each field in the unit a person thinks in. Durations are a number and a unit (minutes,
hours, days: those the table offers for it); points in time are a date and time in the
admin's time zone (``<input type=datetime-local>``), with the time in UTC beside it. The
API keeps the table's own units (seconds, Unix time); only this form converts.

The admin's zone: the panel's script (static/js/panel-time.js) keeps the browser's zone
in the cookie ``panel_tz`` and in each form's hidden ``tz`` field, which names the zone
its times were written in. Without the script (or a zone this server does not know)
times are UTC, and the form says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, available_timezones

from webapp.domain.settings import (
    BY_NAME,
    DURATIONS,
    GROUPS,
    SETTINGS,
    InvalidSetting,
    RoomKind,
    Setting,
)

ZONE_COOKIE = "panel_tz"
MAX_ZONE = 64  # characters of a zone name looked at


class FormField(NamedTuple):
    """What one setting's field shows."""

    setting: Setting
    text: str  # the input's value
    unit: str = ""  # a duration: the unit ``text`` is in
    at: int | None = None  # a point in time: the one typed, in Unix seconds, if it reads


class Group(NamedTuple):
    id: str
    heading: str
    kinds: tuple[RoomKind, ...]  # the kinds of room any of its settings applies to
    settings: tuple[Setting, ...]


# Groups edited on a page of their own: the waiting page's template (admin_page.py)
OWN_PAGES = ("page",)


def _groups() -> tuple[Group, ...]:
    out = []
    for group, heading in GROUPS:
        if group in OWN_PAGES:
            continue
        members = tuple(s for s in SETTINGS if s.group == group and s.name != "kind")
        kinds = tuple(sorted({kind for s in members for kind in s.kinds}))
        out.append(Group(group, heading, kinds, members))
    return tuple(out)


FORM_GROUPS = _groups()  # the form's fieldsets; `kind` is asked first, on its own


# -- the admin's time zone -------------------------------------------------------


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def zone_named(name: str | None) -> tzinfo:
    """The IANA zone of that name; UTC for anything else (no name, an unknown one)."""
    name = (name or "").strip()[:MAX_ZONE]
    return ZoneInfo(name) if name in _zone_names() else UTC


def zone_name(zone: tzinfo) -> str:
    return zone.key if isinstance(zone, ZoneInfo) else "UTC"


def in_utc(at: int) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


# -- values to fields ------------------------------------------------------------


def number_text(number: float) -> str:
    """1.5, 2, 0.25: a number as typed, without a trailing .0 (four decimals at most)."""
    return f"{number:.4f}".rstrip("0").rstrip(".")


def in_units(setting: Setting, value: int) -> tuple[str, str]:
    """A duration as a number and the largest offered unit that holds it exactly
    (else the smallest offered unit, with decimals)."""
    seconds = value * DURATIONS[setting.unit]
    for unit in reversed(setting.units):
        if seconds % DURATIONS[unit] == 0:
            return str(seconds // DURATIONS[unit]), unit
    smallest = setting.units[0]
    return number_text(seconds / DURATIONS[smallest]), smallest


def local_text(at: int, zone: tzinfo) -> str:
    """Unix seconds as an <input type=datetime-local> value in ``zone``."""
    moment = datetime.fromtimestamp(at, zone)
    return moment.strftime("%Y-%m-%dT%H:%M:%S" if moment.second else "%Y-%m-%dT%H:%M")


def field(setting: Setting, value: Any, zone: tzinfo) -> FormField:
    """The field showing a typed value (a room's setting, a default)."""
    if value is None:
        return FormField(setting, "", setting.units[0] if setting.units else "")
    if setting.units:
        return FormField(setting, *in_units(setting, int(value)))
    if setting.moment:
        return FormField(setting, local_text(int(value), zone), at=int(value))
    return FormField(setting, setting.to_text(value))


def fields(values: Mapping[str, Any], zone: tzinfo) -> dict[str, FormField]:
    """Every setting's field showing ``values`` (typed: a room's settings)."""
    return {s.name: field(s, values.get(s.name, s.default), zone) for s in SETTINGS}


def posted_fields(form: Mapping[str, str], zone: tzinfo) -> dict[str, FormField]:
    """Every setting's field as the admin sent it (to show again after an error); a
    setting the form did not carry shows its default."""
    out = {}
    for s in SETTINGS:
        if s.name not in form:
            out[s.name] = field(s, s.default, zone)
            continue
        text = form[s.name]
        unit = form.get(f"{s.name}_unit", "") if s.units else ""
        at = None
        if s.moment:
            with contextlib.suppress(InvalidSetting):
                at = _moment(s, text, zone)
        out[s.name] = FormField(s, text, unit if unit in s.units else "", at)
    return out


# -- fields to values ------------------------------------------------------------


def read_form(
    form: Mapping[str, str], kind: str, zone: tzinfo
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings of a room of ``kind`` that the form carries, each converted from
    the unit or zone it was typed in and checked against the table; an error in words
    per bad field. The other kind's fields (hidden on the form) are not read."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for s in SETTINGS:
        if s.name not in form or kind not in s.kinds:
            continue
        try:
            values[s.name] = read(s, form[s.name], form.get(f"{s.name}_unit", ""), zone)
        except InvalidSetting:
            errors[s.name] = problem(s)
    return values, errors


def read(setting: Setting, text: str, unit: str, zone: tzinfo) -> int | str | None:
    if setting.units and text.strip():
        return _duration(setting, text, unit)
    if setting.moment and text.strip():
        return _moment(setting, text, zone)
    return setting.from_text(text)


def _duration(setting: Setting, text: str, unit: str) -> int | str | None:
    """A number in ``unit`` (without one: the setting's own, as in the API)."""
    unit = unit or setting.unit
    if unit not in DURATIONS:
        raise InvalidSetting(f"{setting.name}: no such unit")
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        raise InvalidSetting(f"{setting.name} must be a number") from None
    if not number.is_finite():
        raise InvalidSetting(f"{setting.name} must be a number")
    stored = number * DURATIONS[unit] / DURATIONS[setting.unit]
    return setting.check(int(stored.to_integral_value()))


def _moment(setting: Setting, text: str, zone: tzinfo) -> int:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidSetting(f"{setting.name} must be a date and time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    try:
        at = moment.timestamp()
    except (OverflowError, OSError, ValueError):
        raise InvalidSetting(f"{setting.name} is out of range") from None
    setting.check(math.floor(at))
    return math.floor(at)


# -- words -------------------------------------------------------------------------


def amount(number: str, unit: str) -> str:
    """ "1 day", "2 days", "1.5 hours"."""
    return f"{number} {unit[:-1] if number == '1' else unit}"


def span(seconds: int) -> str:
    """A bound of a duration in words, in the largest unit that holds it exactly."""
    unit = next(u for u in reversed(DURATIONS) if seconds % DURATIONS[u] == 0)
    return amount(f"{seconds // DURATIONS[unit]:,}", unit)


def shown(setting: Setting, value: Any, zone: tzinfo = UTC) -> str:
    """A value in words (the flash after saving, the audit log): "2 days", "no limit",
    "Lottery", "2025-06-01 18:00 Europe/Berlin (16:00 UTC)"."""
    if value is None or (value == "" and setting.text):
        return setting.blank or "empty"
    if setting.markup:  # a page template: its size, and a digest to tell two apart
        return template_words(str(value))
    if setting.choices:
        return setting.choice_label(str(value))
    if setting.flag:
        return "on" if value else "off"
    if setting.units:
        return amount(*in_units(setting, int(value)))
    if setting.moment:
        if zone is UTC:
            return in_utc(int(value))
        local = datetime.fromtimestamp(int(value), zone).strftime("%Y-%m-%d %H:%M")
        return f"{local} {zone_name(zone)} ({in_utc(int(value))[-9:]})"
    if setting.text:
        return f"“{value}”"
    return f"{value:,}" if isinstance(value, int) else str(value)


def template_words(text: str) -> str:
    """A page template in words: "a template of 2,246 bytes (SHA-1 3f2a9c01)"; the audit
    log keeps a long one as '#<bytes>:<sha1 hex>' (room_configure.lua)."""
    kept = re.fullmatch(r"#(\d+):([0-9a-f]{40})", text)
    if kept:
        size, digest = int(kept[1]), kept[2]
    else:
        size, digest = len(text.encode()), hashlib.sha1(text.encode()).hexdigest()
    return f"a template of {size:,} bytes (SHA-1 {digest[:8]})"


def problem(setting: Setting) -> str:
    """What a field takes, for its error message."""
    empty = f" (or empty: {setting.blank})" if setting.nullable else ""
    if setting.choices:
        allowed = " or ".join(label for _, label in setting.choices)
        return f"{setting.label}: choose {allowed}."
    if setting.url:
        return f"{setting.label} must be an http:// or https:// address (or empty)."
    if setting.text:
        return f"{setting.label}: plain text of at most {setting.text} characters."
    if setting.units:
        low = span(setting.low * DURATIONS[setting.unit])
        high = span(setting.high * DURATIONS[setting.unit])
        return f"{setting.label} must be a length of time from {low} to {high}{empty}."
    if setting.moment:
        return f"{setting.label} must be a date and time from 1970 to 2099{empty}."
    return (
        f"{setting.label} must be a whole number from {setting.low:,} to "
        f"{setting.high:,} {setting.unit}{empty}."
    )


def changes_in_words(was: Mapping[str, Any], changes: Mapping[str, Any], zone: tzinfo = UTC) -> str:
    """ "Capacity 5 → 20; Longest line no limit → 99"."""
    return "; ".join(
        f"{BY_NAME[name].label} {shown(BY_NAME[name], was.get(name), zone)} → "
        f"{shown(BY_NAME[name], value, zone)}"
        for name, value in changes.items()
    )
