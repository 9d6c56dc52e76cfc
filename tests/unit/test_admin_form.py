"""The admin form's conversions (webapp/views/admin/form.py): durations in the unit a
person thinks in, times in the admin's zone, the fields of one kind of room, errors in
words. The API's units are the table's; only the form converts."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.domain.settings import BY_NAME, SETTINGS, RoomSettings
from webapp.views.admin.form import (
    changes_in_words,
    field,
    fields,
    problem,
    read_form,
    shown,
    zone_named,
)

BERLIN = ZoneInfo("Europe/Berlin")


def test_durations_show_in_the_largest_unit_that_holds_them():
    """Two days as 2 days, ten minutes as 10 minutes, 90 s as 1.5 minutes."""
    claim, session = BY_NAME["claim_seconds"], BY_NAME["session_seconds"]
    assert field(claim, 172_800, UTC)[1:3] == ("2", "days")
    assert field(session, 600, UTC)[1:3] == ("10", "minutes")
    assert field(BY_NAME["typical_stay_seconds"], 90, UTC)[1:3] == ("1.5", "minutes")
    assert field(BY_NAME["admit_every_minutes"], 120, UTC)[1:3] == ("2", "hours")


@given(st.sampled_from([s for s in SETTINGS if s.units]), st.data())
def test_a_duration_shown_reads_back_the_same(setting, data):
    """Whatever a duration is, the form shows it so that saving it again changes nothing."""
    value = data.draw(st.integers(setting.low, setting.high))
    shown_field = field(setting, value, UTC)
    form = {setting.name: shown_field.text, f"{setting.name}_unit": shown_field.unit}
    kind = setting.kinds[0]
    assert read_form(form, kind, UTC) == ({setting.name: value}, {})


def test_a_duration_is_read_in_its_unit():
    """3 days is 259,200 s; 1.5 hours of admit_every_minutes is 90 minutes; no unit: the API's."""
    form = {"claim_seconds": "3", "claim_seconds_unit": "days",
            "admit_every_minutes": "1.5", "admit_every_minutes_unit": "hours"}  # fmt: skip
    assert read_form(form, "waitlist", UTC)[0] == {"claim_seconds": 259_200,
                                                   "admit_every_minutes": 90}  # fmt: skip
    assert read_form({"grace_seconds": "20"}, "live", UTC)[0] == {"grace_seconds": 20}


BAD_DURATIONS = [("31", "days"), ("0.5", "minutes"), ("two", "days"), ("NaN", "days"),
                 ("1", "fortnights")]  # fmt: skip


@pytest.mark.parametrize(("text", "unit"), BAD_DURATIONS)
def test_a_bad_duration_says_what_it_takes(text, unit):
    """Out of bounds, not a number or an unknown unit: one message with the bounds in words."""
    values, errors = read_form({"claim_seconds": text, "claim_seconds_unit": unit}, "waitlist", UTC)
    assert values == {}
    assert errors == {
        "claim_seconds": "Time to claim must be a length of time from 1 minute to 30 days."
    }


def test_a_time_is_typed_in_the_admin_s_zone_and_stored_in_utc():
    """18:00 in Berlin in June is 16:00 UTC; the same field in UTC is 18:00 UTC."""
    at = int(datetime(2030, 6, 1, 16, 0, tzinfo=UTC).timestamp())
    assert read_form({"opens_at": "2030-06-01T18:00"}, "live", BERLIN)[0] == {"opens_at": at}
    assert read_form({"opens_at": "2030-06-01T18:00"}, "live", UTC)[0] == {"opens_at": at + 7200}
    assert field(BY_NAME["opens_at"], at, BERLIN).text == "2030-06-01T18:00"
    assert field(BY_NAME["opens_at"], at, UTC).text == "2030-06-01T16:00"
    assert read_form({"opens_at": ""}, "live", BERLIN)[0] == {"opens_at": None}


def test_a_bad_time_says_what_it_takes():
    """Not a date, or before 1970: refused, with what the field takes."""
    for text in ("tomorrow", "1969-12-31T23:00", "2101-01-01T00:00"):
        assert read_form({"draw_at": text}, "waitlist", UTC)[1] == {
            "draw_at": "Draw time must be a date and time from 1970 to 2099 "
            "(or empty: only by an admin)."
        }


def test_an_unknown_zone_is_utc():
    """A zone name the server does not know (or none) means UTC, never an error."""
    assert zone_named("Europe/Berlin") == BERLIN
    for name in ("", None, "Mars/Olympus", "../etc/passwd", "x" * 500):
        assert zone_named(name) is UTC


def test_only_the_fields_of_the_room_s_kind_are_read():
    """A live room's form ignores the waitlist's fields (hidden, but sent) and the other
    way round; bad values there are no error."""
    form = {"capacity": "4", "claim_seconds": "nonsense", "ordering": "gone"}
    assert read_form(form, "live", UTC) == ({"capacity": 4}, {})
    form = {"capacity": "nonsense", "ordering": "lottery"}
    assert read_form(form, "waitlist", UTC) == ({"ordering": "lottery"}, {})


def test_every_default_reads_back_as_the_default():
    """The form of a new room, sent unchanged, asks for the table's defaults."""
    shown_fields = fields(RoomSettings().as_dict(), UTC)
    for kind in ("live", "waitlist"):
        form = {name: f.text for name, f in shown_fields.items()}
        form |= {f"{name}_unit": f.unit for name, f in shown_fields.items() if f.unit}
        values, errors = read_form(form, kind, UTC)
        assert errors == {}
        assert all(values[name] == BY_NAME[name].default for name in values)


def test_values_and_changes_in_words():
    """What the flash and the audit log say: units, choices' labels, blanks, times."""
    assert shown(BY_NAME["claim_seconds"], 86400) == "1 day"
    assert shown(BY_NAME["max_line_length"], None) == "no limit"
    assert shown(BY_NAME["ordering"], "fifo") == "First come"
    at = int(datetime(2030, 6, 1, 16, 0, tzinfo=UTC).timestamp())
    assert shown(BY_NAME["opens_at"], at) == "2030-06-01 16:00 UTC"
    assert shown(BY_NAME["opens_at"], at, BERLIN) == "2030-06-01 18:00 Europe/Berlin (16:00 UTC)"
    words = changes_in_words({"capacity": 2, "title": ""}, {"capacity": 3, "title": "Gala"})
    assert words == "Capacity 2 → 3; Title empty → “Gala”"
    assert problem(BY_NAME["status"]) == "Status: choose Open or Paused or Closed."
