"""The panel's forms and pages for each kind of room (issue 21, the admin's path): the
fields of the room's kind only, durations in units and times in the admin's zone; a
waitlist's own figures; links to the public pages; offers apart from seats; the audit
log in words, a visitor's own leave in it; saying when nothing is measured yet."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tests.web import test_admin_panel as base
from tests.web.conftest import mailer_says
from tests.web.test_admin_panel import ROOM, line_of
from webapp.domain.claims import Claim, Claims

NEW_YORK = ZoneInfo("America/New_York")
# The panel's fixtures: the app on the test's clock with the account "ada", logged in.
app, rooms = base.app, base.rooms  # panel, visits, reports: the conftest's


@pytest.fixture
def waitlists(app):
    return app.extensions["services"].waitlists


def section(page: str, marker: str) -> str:
    """The part of ``page`` from ``marker`` to the end of its <section>."""
    start = page.index(marker)
    return page[start : page.index("</section>", start)]


def field_of(page: str, name: str) -> str:
    """The <div class="field ..."> holding the setting ``name``'s input."""
    at = page.index(f'name="{name}"')
    start = page.rindex('<div class="field', 0, at)
    return page[start:at]


def signups(visits, waitlists, room: str, n: int, confirmed: int) -> list[str]:
    """``n`` entries, the first ``confirmed`` of them confirmed; their ids."""
    ids = []
    for i in range(n):
        entry = waitlists.join(room, f"Fan {i}", f"fan{i}@example.com", address=f"198.51.100.{i}")
        ids.append(entry.id)
        if i < confirmed:
            waitlists.confirm(room, entry.id)
    return ids


# -- the forms ------------------------------------------------------------------


def test_the_create_form_asks_the_kind_first_and_marks_each_kind_s_fields(panel):
    """The kind is the form's first question (?kind= chooses it); each setting of one
    kind only is marked so that the stylesheet hides it for the other kind."""
    page = panel.page("/admin/")
    form = page[page.index('action="/admin/rooms"') :]
    assert form.index('name="kind"') < form.index('name="name"') < form.index('name="capacity"')
    assert re.search(r'id="new-kind" name="kind" value="live" checked', form)
    assert "only-live" in field_of(form, "capacity")
    assert "only-live" in field_of(form, "grace_seconds")
    assert "only-waitlist" in field_of(form, "claim_seconds")
    assert "only-" not in field_of(form, "title") and "only-" not in field_of(form, "opens_at")
    chosen = panel.page("/admin/?kind=waitlist")
    assert re.search(r'name="kind" value="waitlist" checked', chosen)


def test_creating_a_waitlist_reads_its_own_fields_only(panel, rooms):
    """A waitlist created with the live fields (hidden, but sent) holding nonsense: they
    are not read; durations in days, a time in the admin's zone."""
    response = panel.post("/admin/rooms", name="launch", kind="waitlist", tz="America/New_York",
                          capacity="nonsense", grace_seconds="-5", ordering="lottery",
                          claim_seconds="3", claim_seconds_unit="days",
                          draw_at="2030-06-01T18:00", admit_every_minutes="2",
                          admit_every_minutes_unit="hours")  # fmt: skip
    assert "Created the waitlist launch." in panel.flashed(response)
    settings = rooms.find_settings("launch")
    assert (settings.kind, settings.ordering, settings.capacity) == ("waitlist", "lottery", 10)
    assert settings.claim_seconds == 3 * 86400 and settings.admit_every_minutes == 120
    assert settings.draw_at == int(datetime(2030, 6, 1, 22, 0, tzinfo=UTC).timestamp())


def test_a_duration_is_shown_and_saved_in_its_unit(panel, rooms, reports):
    """Time to claim shows as 2 days, not 172800 seconds; 3 days saved is 259,200 s and
    the flash and the audit log say it in days."""
    rooms.configure("hall", {"kind": "waitlist"})
    page = panel.page(ROOM)
    claim = field_of(page, "claim_seconds_unit")
    assert 'value="2"' in claim and "172800" not in page
    assert '<option value="days" selected>days</option>' in page
    response = panel.post(f"{ROOM}/settings", kind="waitlist", tz="UTC", claim_seconds="3",
                          claim_seconds_unit="days")  # fmt: skip
    assert "Saved: Time to claim 2 days → 3 days." in panel.flashed(response)
    assert rooms.find_settings("hall").claim_seconds == 259_200
    assert "Time to claim 2 days → 3 days" in panel.page(f"{ROOM}/audit")


def test_a_time_is_typed_and_shown_in_the_admin_s_zone(panel, rooms):
    """The form's zone (the script's `tz`) reads a time; the page shows it in the zone the
    cookie names, the UTC time beside it; without the cookie, in UTC, and says so."""
    rooms.configure("hall", {"status": "closed"})
    response = panel.post(f"{ROOM}/settings", kind="live", tz="America/New_York",
                          opens_at="2030-06-01T18:00")  # fmt: skip
    flash = "Opens at not announced → 2030-06-01 18:00 America/New_York (22:00 UTC)."
    assert flash in panel.flashed(response)
    at = int(datetime(2030, 6, 1, 18, 0, tzinfo=NEW_YORK).timestamp())
    assert rooms.find_settings("hall").opens_at == at
    panel.client.set_cookie("panel_tz", "America/New_York")
    page = panel.page(ROOM)
    assert f'type="datetime-local" value="2030-06-01T18:00" data-utc="{at}"' in page
    assert "In UTC: 2030-06-01 22:00:00" in page
    assert "time in <span data-zone>America/New_York</span>" in page
    panel.client.set_cookie("panel_tz", "Not/AZone")
    page = panel.page(ROOM)
    assert 'value="2030-06-01T22:00"' in page and "time in <span data-zone>UTC</span>" in page
    assert '<input type="hidden" name="tz" value="UTC">' in page


def test_a_bad_time_or_duration_keeps_what_was_typed(panel, rooms):
    """400 with each error in words and the form as typed; nothing saved."""
    rooms.configure("hall", {})
    response = panel.post(f"{ROOM}/settings", kind="live", tz="UTC", opens_at="someday",
                          grace_seconds="90", grace_seconds_unit="minutes")  # fmt: skip
    text = response.get_data(as_text=True)
    assert response.status_code == 400
    assert text.count("Grace period must be a length of time from 1 second to 1 hour.") == 2
    assert text.count("Opens at must be a date and time from 1970 to 2099") == 2
    assert 'value="someday"' in text and 'value="90"' in text
    units = text[text.index('name="grace_seconds_unit"') :]
    assert '<option value="minutes" selected>' in units[: units.index("</select>")]
    assert rooms.find_settings("hall") == rooms.find_settings("hall").changed({})
    assert rooms.find_settings("hall").grace_seconds == 15


def test_the_room_page_asks_its_own_kind(panel, rooms):
    """A waitlist's settings form has the waitlist chosen; a live room's, the live room."""
    rooms.configure("hall", {"kind": "waitlist"})
    assert re.search(r'name="kind" value="waitlist" checked', panel.page(ROOM))
    rooms.configure("gig", {})
    assert re.search(r'id="setting-kind" name="kind" value="live" checked',
                     panel.page("/admin/rooms/gig"))  # fmt: skip


# -- the audit log --------------------------------------------------------------


def test_the_audit_log_says_each_change_with_its_old_value(panel, rooms, app):
    """capacity 2 -> 3 reads "Capacity 2 → 3", however it was made; a change of nothing
    is not recorded; a new room lists what it was made with."""
    panel.post("/admin/rooms", name="hall", kind="live", tz="UTC", capacity="2")
    panel.post(f"{ROOM}/settings", kind="live", tz="UTC", capacity="3")
    api = app.test_client()
    admin = {"Authorization": "Bearer audit-token-0123456789"}
    app.config["ADMIN_TOKEN"] = "audit-token-0123456789"
    api.put("/api/admin/rooms/hall", json={"capacity": 4, "grace_seconds": 15}, headers=admin)
    api.put("/api/admin/rooms/hall", json={"capacity": 4}, headers=admin)  # nothing changes
    page = panel.page(f"{ROOM}/audit")
    assert page.count("Settings changed</td>") == 2
    assert "Capacity 3 → 4</td>" in page and "Capacity 2 → 3</td>" in page
    assert "Capacity 2;" in page  # the new room's settings


def test_a_visitor_s_own_leave_is_in_the_audit_log(panel, rooms, app):
    """Leaving by oneself is recorded as "Left", by "visitor", with what was left."""
    rooms.configure("hall", {"capacity": 1})
    api = app.test_client()
    seated = api.post("/api/rooms/hall/join", json={"name": "Ann"}).get_json()
    waiting = api.post("/api/rooms/hall/join", json={"name": "Bo"}).get_json()
    api.post(f"/api/rooms/hall/leave/{waiting['token']}")
    api.post(f"/api/rooms/hall/leave/{seated['token']}")
    page = panel.page(f"{ROOM}/audit?kind=leave")
    assert page.count("visitor</td>") == 2
    assert "left the line" in page and "gave up the seat" in page
    assert waiting["support_code"] in page and "Bo" in page


# -- a room's page ----------------------------------------------------------------


def test_a_waitlist_page_shows_its_own_figures_only(panel, rooms, visits, waitlists, app, clock):
    """Entries, confirmed, waiting, admitted, claimed, lapsed; no seats, no live line."""
    rooms.configure("hall", {"kind": "waitlist", "claim_seconds": 60})
    ids = signups(visits, waitlists, "hall", 5, confirmed=3)
    visits.admit("hall", 2, who="ada")
    services = app.extensions["services"]
    Claims(services.client, services.keys, services.scripts).claim(
        Claim("hall", ids[0], "admitted", 0), clock.now
    )
    clock.advance(61)
    visits.sweep("hall")  # the second lapses unclaimed; the third is admitted in its place
    page = panel.page(ROOM)
    figures = section(page, 'aria-label="Figures"')
    found = dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]+)</dd>", figures))
    assert found == {"Entries": "5", "Confirmed": "2", "Waiting": "2", "Admitted": "2",
                     "Claimed": "1", "Lapsed": "1", "Order": "First come"}  # fmt: skip
    live = ("Seats taken", "Nobody is waiting", "In the room", "Wait at the back",
            "Admit even if the room is full", "How right the wait estimates were")  # fmt: skip
    for words in live:
        assert words not in page, words
    assert "Sign-ups per minute" in page and "Waitlist <span" in page


@pytest.mark.parametrize("mail", ["works", "down"])
def test_admitting_from_a_waitlist_promises_an_email_only_when_one_can_go(panel, rooms, app, mail):
    """The admit card says each is emailed a claim link only while mail can be sent; the
    Emails card names the SMTP server's answer in words, without its errno."""
    rooms.configure("hall", {"kind": "waitlist"})
    mailer_says(app, ok=mail == "works", error="" if mail == "works" else "Connection refused")
    page = panel.page(ROOM)
    assert ("Each is emailed a claim link" in page) == (mail == "works")
    assert ("emailed once mail can be sent" in page) == (mail == "down")
    assert "Errno" not in page


def test_the_overview_has_a_table_for_each_kind(panel, rooms, visits, waitlists):
    """Live rooms with seats and waits; waitlists with their own figures."""
    rooms.configure("hall", {"capacity": 2})
    rooms.configure("launch", {"kind": "waitlist"})
    signups(visits, waitlists, "launch", 3, confirmed=2)
    page = panel.page("/admin/")
    live = page[page.index('id="live-caption"') : page.index("</table>")]
    waitlist = page[page.index('id="waitlists-caption"') :]
    assert "hall" in live and "launch" not in live and "0 / 2" in live
    assert "none: a seat is free" in live  # no wait to estimate with seats free
    assert "launch" in waitlist and "Seats taken" not in waitlist
    row = waitlist[waitlist.index('href="/admin/rooms/launch"') :]
    cells = re.findall(r'data-label="([^"]+)" class="num">([^<]+)<', row[: row.index("</tr>")])
    assert cells[:6] == [("Entries", "3"), ("Confirmed", "2"), ("Waiting", "3"),
                         ("Admitted", "0"), ("Claimed", "0"), ("Lapsed", "0")]  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "links"),
    [({}, ["/rooms/hall"]),
     ({"kind": "waitlist"}, ["/rooms/hall"]),
     ({"kind": "waitlist", "ordering": "lottery"}, ["/rooms/hall", "/rooms/hall/draw"])],
)  # fmt: skip
def test_the_room_page_links_to_the_public_pages(panel, rooms, settings, links):
    """The room's own public page, and a lottery's draw page."""
    rooms.configure("hall", settings)
    found = re.findall(r'<a href="(/rooms/[^"]+)"', section(panel.page(ROOM), "Figures"))
    assert found == links


def test_an_offered_seat_is_not_in_the_room(panel, rooms, visits, app):
    """An admin admits someone whose page is closed: offered, listed apart from those in
    the room; once their check-in takes the seat, in the room."""
    rooms.configure("hall", {"capacity": 2, "admission_mode": "manual"})
    api = app.test_client()
    ann = api.post("/api/rooms/hall/join", json={"name": "Ann"}).get_json()
    visits.admit("hall", 1, who="ada")
    page = panel.page(ROOM)
    assert ann["support_code"] in section(page, 'id="offered"')
    assert ann["support_code"] not in section(page, 'id="seated"')
    assert "Nobody is in the room yet" in section(page, 'id="seated"')
    assert "Offered, not taken yet</dt><dd>1" in page
    assert api.get(f"/api/rooms/hall/position/{ann['token']}").get_json()["status"] == "admitted"
    page = panel.page(ROOM)
    assert 'id="offered"' not in page and ann["support_code"] in section(page, 'id="seated"')


def test_remove_and_end_seat_ask_first(panel, rooms, visits):
    """Each is a disclosure whose only button is the real one: nothing is removed by the
    first click (the browser test clicks both)."""
    rooms.configure("hall", {"capacity": 1})
    seated, waiting = line_of(visits, 2)
    page = panel.page(ROOM)
    asks = [
        ("Remove", "Yes, remove", waiting.support_code),
        ("End seat", "Yes, end the seat", seated.support_code),
    ]
    for verb, confirm, code in asks:
        action = f"/admin/rooms/hall/people/{code}/remove"
        disclosure = page[page.rindex('<details class="confirm">', 0, page.index(action)) :]
        disclosure = disclosure[: disclosure.index("</details>")]
        assert f'<summary class="button small danger-quiet">{verb}<span' in disclosure
        assert f'formaction="{action}">{confirm}<span' in disclosure


def test_the_panel_says_when_nothing_is_measured(panel, rooms, visits, reports, clock):
    """A new room: estimates from the typical stay, said; without a typical stay:
    no estimate, said; once five stays are measured, nothing to say."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 3600})
    line_of(visits, 3)
    note = "Wait estimates come from the typical stay (15 minutes), with the longer hold"
    assert note in panel.page(ROOM)
    assert "from the typical stay: nothing measured yet" in panel.page("/admin/")
    rooms.configure("hall", {"typical_stay_seconds": None})
    page = panel.page(ROOM)
    assert "no typical stay is set" in page and "no estimate" in page
    for i in range(10):  # stays of a minute, each ended with people waiting
        visits.join("hall", identity=f"later{i}")
        clock.advance(60)
        visits.remove("hall", reports.participants("hall")[0].token, who="ada")
    page = panel.page(ROOM)
    assert 'id="basis-note"' not in page and "nothing measured yet" not in panel.page("/admin/")
