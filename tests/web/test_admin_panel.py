"""The admin control panel (issue 11): each action's effect, validation, refusals and
audit record; the overview and its partial; charts; paging and search; 404s."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from flask import Flask

from tests.web.test_admin_login import Browser
from webapp.domain.reports import AuditEntry, Reports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.visits import Visits
from webapp.views.shared import charts

ROOM = "/admin/rooms/hall"


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


class Panel(Browser):
    """A logged-in admin: form posts carry the panel's CSRF token."""

    def post(self, path: str, csrf: bool = True, **form: Any) -> Any:
        if csrf:
            form["csrf_token"] = self.csrf("/admin/")
        return self.client.post(path, data=form)

    def page(self, path: str, **kwargs: Any) -> str:
        response = self.client.get(path, **kwargs)
        assert response.status_code == 200, response.status_code
        return str(response.get_data(as_text=True))

    def flashed(self, response: Any) -> str:
        """The page a 303 leads to, whose flash says what happened."""
        assert response.status_code == 303, response.get_data(as_text=True)[:500]
        return self.page(response.location)


@pytest.fixture
def rooms(app: Flask) -> WaitingRooms:
    engine: WaitingRooms = app.extensions["services"].rooms
    return engine


def line_of(visits: Visits, n: int, room: str = "hall", names: str = "P") -> list[Any]:
    return [visits.join(room, identity=f"{names}{i}", name=f"{names}{i}").ticket for i in range(n)]


def newest(reports: Reports, kind: str, room: str = "hall") -> AuditEntry:
    return reports.audit(room, 1, [kind])[0]


# -- login and CSRF -----------------------------------------------------------

GETS = ["/admin/", ROOM, f"{ROOM}?page=2", f"{ROOM}/audit", f"{ROOM}/audit.csv"]
POSTS = ["/admin/rooms", f"{ROOM}/settings", f"{ROOM}/status", f"{ROOM}/delete",
         f"{ROOM}/admit", f"{ROOM}/notice", f"{ROOM}/people/ABC123/admit",
         f"{ROOM}/people/ABC123/front", f"{ROOM}/people/ABC123/remove"]  # fmt: skip


@pytest.mark.parametrize("path", GETS)
def test_pages_need_a_login(app, rooms, path):
    """Without a login every page redirects to the login form, and comes back after."""
    rooms.configure("hall", {})
    response = app.test_client().get(path)
    assert response.status_code == 302
    assert response.location.startswith("/admin/login?next=/admin/")


@pytest.mark.parametrize("path", POSTS)
def test_actions_need_a_login_and_change_nothing(app, rooms, visits, reports, path):
    """A POST with a valid CSRF token but no login: to the login form, nothing done."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 3)
    before = reports.audit("hall", 100)
    anonymous = Browser(app.test_client())
    form = {"csrf_token": anonymous.csrf(), "count": "1", "text": "hi", "status": "closed",
            "name": "x"}  # fmt: skip
    response = anonymous.client.post(path, data=form)
    assert response.status_code == 302 and "/admin/login" in response.location
    assert reports.audit("hall", 100) == before and rooms.find_settings("x") is None


@pytest.mark.parametrize("path", POSTS)
def test_actions_without_a_csrf_token_are_refused(panel, rooms, visits, reports, path):
    """A logged-in POST without the CSRF token: 400, nothing done."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 3)
    before = reports.audit("hall", 100)
    response = panel.post(path, csrf=False, count="1", text="hi", status="closed", name="x")
    assert response.status_code == 400
    assert reports.audit("hall", 100) == before and rooms.find_settings("hall") is not None


# -- the overview -------------------------------------------------------------


def test_overview_shows_every_room_and_polls_a_partial(panel, rooms, visits):
    """Seats taken of capacity, waiting, status, mode, rates, wait at the back, notice;
    an htmx request gets the table alone, which asks again every 5 s."""
    rooms.configure("hall", {"capacity": 2})
    rooms.configure("quiet", {"capacity": 5, "status": "paused", "admission_mode": "manual"})
    line_of(visits, 5)
    visits.notice("hall", "Doors at ten", who="ada")
    page = panel.page("/admin/")
    assert "logged in as <strong>ada</strong>" in page
    hall = page[page.index('href="/admin/rooms/hall"') :]
    row = hall[: hall.index("</tr>")]
    assert "2 / 2" in row and ">3<" in row and "Open" in row and "Automatic" in row
    assert "0.5" in row  # 5 joins in the last 10 minutes
    assert "Doors at ten" in row and "from the typical stay: nothing measured yet" in row
    assert "Paused" in page and "Manual" in page and "0 / 5" in page
    partial = panel.client.get("/admin/", headers={"HX-Request": "true", "HX-Target": "rooms"})
    text = partial.get_data(as_text=True)
    assert partial.status_code == 200 and text.lstrip().startswith('<section id="rooms"')
    assert 'hx-trigger="every 5s"' in text and "<html" not in text and "Doors at ten" in text


def test_creating_a_room_with_its_settings(panel, rooms, reports):
    """Name and settings from the form: the room exists, the audit log says who."""
    form = {"name": "gala", "capacity": "25", "dropout_seconds": "30", "grace_seconds": "15",
            "session_seconds": "600", "max_wait_seconds": "", "max_line_length": "500",
            "status": "paused", "admission_mode": "manual"}  # fmt: skip
    response = panel.post("/admin/rooms", **form)
    assert response.location == "/admin/rooms/gala"
    assert "Created the live room gala." in panel.flashed(response)
    settings = rooms.find_settings("gala")
    assert settings is not None
    assert (settings.capacity, settings.max_line_length, settings.max_wait_seconds) == (
        25,
        500,
        None,
    )
    assert (settings.status, settings.admission_mode) == ("paused", "manual")
    entry = newest(reports, "create", "gala")
    assert entry.who == "ada" and ["capacity", "10", "25"] in json.loads(entry.detail)


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"name": "Bad Name!"}, "A room name is 1 to 64 characters"),
        ({"name": "hall"}, "There is already a room named hall."),
        (
            {"name": "new", "capacity": "0"},
            "Capacity must be a whole number from 1 to 1,000,000 seats.",
        ),
        ({"name": "new", "status": "gone"}, "Status: choose Open or Paused or Closed."),
    ],
)
def test_creating_a_room_refuses_bad_input(panel, rooms, form, message):
    """400 with the error in the summary and next to the field; the values are kept."""
    rooms.configure("hall", {})
    response = panel.post("/admin/rooms", **form)
    text = response.get_data(as_text=True)
    assert response.status_code == 400
    assert 'role="alert"' in text and text.count(message) == 2
    assert f'value="{form["name"]}"' in text.replace("&#39;", "'")
    assert rooms.names() == ["hall"]


# -- a room's settings and status ---------------------------------------------


def test_the_room_page_has_every_setting_in_one_form(panel, rooms):
    """Labels, help, units, bounds and selects come from SETTINGS."""
    rooms.configure("hall", {"capacity": 7})
    page = panel.page(ROOM)
    assert 'Capacity <span class="unit">(seats)</span>' in page
    assert 'name="capacity" type="number"' in page and 'min="1" max="1000000" value="7"' in page
    assert '<label for="setting-dropout_seconds">Check-in window</label>' in page
    assert '<select id="setting-admission_mode" name="admission_mode"' in page
    assert '<option value="manual">Manual</option>' in page
    assert 'placeholder="No limit"' in page


def test_the_panel_says_how_long_an_emailed_offer_lasts(panel, rooms):
    """The setting is on the form (in minutes or seconds), and the admit help says the
    window of an offer to someone who gave an email beside the check-in window's."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 30})
    page = panel.page(ROOM)
    assert '<label for="setting-email_claim_seconds">Time to take an emailed seat</label>' in page
    help_text = re.search(r'id="admit-count-help">(.*?)</p>', page, re.S)
    assert help_text is not None
    assert "has 30 seconds to take it (3 minutes for someone who gave an email)" in help_text[1]
    response = panel.post(f"{ROOM}/settings", email_claim_seconds="300")
    assert rooms.find_settings("hall").email_claim_seconds == 300
    assert "5 minutes for someone who gave an email" in panel.flashed(response)


def test_saving_settings_writes_only_what_changed(panel, rooms, reports):
    """The audit entry names the changed fields alone; the flash says old and new."""
    rooms.configure("hall", {"capacity": 5})
    form = {
        s: str(v) if v is not None else "" for s, v in rooms.find_settings("hall").as_dict().items()
    }
    response = panel.post(f"{ROOM}/settings", **{**form, "capacity": "20", "max_line_length": "99"})
    assert "Saved: Capacity 5 → 20; Longest line no limit → 99." in panel.flashed(response)
    assert rooms.find_settings("hall").capacity == 20
    entry = newest(reports, "settings")
    assert entry.who == "ada"
    assert json.loads(entry.detail) == [["capacity", "5", "20"], ["max_line_length", "", "99"]]
    again = panel.post(f"{ROOM}/settings", **{**form, "capacity": "20", "max_line_length": "99"})
    assert "Nothing to save" in panel.flashed(again)
    assert len(reports.audit("hall", 10, ["settings"])) == 1


def test_bad_settings_change_nothing_and_say_why(panel, rooms, reports):
    """400: each error in the summary (role=alert) and next to its field, values kept."""
    rooms.configure("hall", {"capacity": 5})
    response = panel.post(f"{ROOM}/settings", capacity="many", grace_seconds="99999")
    text = response.get_data(as_text=True)
    assert response.status_code == 400 and 'class="error-summary" role="alert"' in text
    assert text.count("Capacity must be a whole number from 1 to 1,000,000 seats.") == 2
    assert 'href="#setting-grace_seconds"' in text and 'aria-invalid="true"' in text
    assert 'value="many"' in text and 'value="99999"' in text
    assert (
        rooms.find_settings("hall").capacity == 5 and reports.audit("hall", 10, ["settings"]) == []
    )


@pytest.mark.parametrize("status", ["paused", "closed", "open"])
def test_open_pause_and_close(panel, rooms, reports, status):
    """One button each; the flash and the audit log say so."""
    rooms.configure("hall", {"status": "closed" if status == "open" else "open"})
    response = panel.post(f"{ROOM}/status", status=status)
    assert f"The room is {status} now." in panel.flashed(response)
    assert rooms.find_settings("hall").status == status
    was = "closed" if status == "open" else "open"
    assert json.loads(newest(reports, "settings").detail) == [["status", was, status]]


def test_a_bad_status_is_a_400(panel, rooms):
    """A status that does not exist: the page with the error, nothing changed."""
    rooms.configure("hall", {})
    response = panel.post(f"{ROOM}/status", status="gone")
    assert response.status_code == 400 and "Choose open, paused or closed." in response.get_data(
        as_text=True
    )
    assert rooms.find_settings("hall").status == "open"


def test_deleting_a_room_after_confirming(panel, rooms, visits):
    """The confirm button sits in a <details>; the room and its line are gone."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 3)
    page = panel.page(ROOM)
    assert "<details>" in page and "Yes, delete hall for good" in page
    assert "This ends the places of 2 people in line and the seats of 1" in page
    response = panel.post(f"{ROOM}/delete")
    assert response.location == "/admin/"
    assert "Deleted the room hall" in panel.flashed(response)
    assert rooms.find_settings("hall") is None
    again = panel.post(f"{ROOM}/delete")
    assert "Nothing changed: No room named" in panel.flashed(again)


# -- people -------------------------------------------------------------------


def test_admitting_the_next_n_once_per_request_id(panel, rooms, visits, reports):
    """Admit 2: the first two are offered seats; the same form sent again admits nobody."""
    rooms.configure("hall", {"capacity": 5, "admission_mode": "manual"})
    people = line_of(visits, 4)
    page = panel.page(ROOM)
    request_id = re.search(r'name="request_id" value="([^"]+)"', page).group(1)
    response = panel.post(f"{ROOM}/admit", count="2", request_id=request_id)
    codes = f"{people[0].support_code}, {people[1].support_code}"
    assert f"Admitted 2: {codes}" in panel.flashed(response)
    assert reports.summary("hall").active == 2
    replay = panel.post(f"{ROOM}/admit", count="2", request_id=request_id)
    assert "nobody was admitted twice" in panel.flashed(replay)
    assert reports.summary("hall").active == 2
    admits = reports.audit("hall", 10, ["admit"])
    assert [(a.who, a.code) for a in admits] == [("ada", p.support_code) for p in people[1::-1]]
    assert request_id not in panel.page(ROOM)  # each page view makes a new one


def test_admitting_beyond_capacity_needs_the_override(panel, rooms, visits, reports):
    """Without the box only the free seats are given; with it, as many as asked."""
    rooms.configure("hall", {"capacity": 2, "admission_mode": "manual"})
    line_of(visits, 5)
    page = panel.page(ROOM)
    assert '<label for="admit-override">Admit even if the room is full</label>' in page
    first = panel.post(f"{ROOM}/admit", count="3", request_id="a")
    assert "Admitted 2 of the 3 asked for" in panel.flashed(first)
    full = panel.post(f"{ROOM}/admit", count="1", request_id="b")
    assert "Nobody was admitted: all 2 seats are taken." in panel.flashed(full)
    over = panel.post(f"{ROOM}/admit", count="2", request_id="c", override="1")
    assert "Admitted 2:" in panel.flashed(over)
    assert reports.summary("hall").active == 4


@pytest.mark.parametrize("count", ["0", "-1", "two", "", "10001"])
def test_admitting_refuses_a_bad_count(panel, rooms, visits, count, reports):
    """400 with the error, the number kept; nobody admitted."""
    rooms.configure("hall", {"capacity": 5, "admission_mode": "manual"})
    line_of(visits, 2)
    response = panel.post(f"{ROOM}/admit", count=count, request_id="x")
    text = response.get_data(as_text=True)
    assert response.status_code == 400
    assert text.count("Type a whole number of people from 1 to 10,000.") == 2
    assert f'value="{count}"' in text and reports.summary("hall").active == 0


def test_admitting_one_person_wherever_they_stand(panel, rooms, visits, reports):
    """ "Admit" on the third in line seats them (past a full room only with the box
    ticked); on someone no longer waiting it is refused."""
    rooms.configure("hall", {"capacity": 1, "admission_mode": "manual"})
    _, second, third = line_of(visits, 3)
    visits.admit("hall", 1, who="ada")  # the room is full now
    page = panel.page(ROOM)
    assert f'Admit<span class="sr-only"> P2 ({third.support_code})</span>' in page
    assert '<label for="line-override">Admit even if the room is full' in page
    full = panel.post(f"{ROOM}/people/{third.support_code}/admit")
    assert f"P2 ({third.support_code}) was not admitted: the one seat is taken." in panel.flashed(
        full
    )
    assert reports.summary("hall").active == 1
    response = panel.post(f"{ROOM}/people/{third.support_code}/admit", override="1")
    assert f"Admitted P2 ({third.support_code})." in panel.flashed(response)
    assert reports.summary("hall").active == 2
    entry = newest(reports, "admit")
    assert (entry.who, entry.code, entry.name) == ("ada", third.support_code, "P2")
    again = panel.post(f"{ROOM}/people/{third.support_code}/admit", override="1")
    assert "Nothing changed: This ticket is not waiting in line." in panel.flashed(again)
    assert [p.token for p in reports.line("hall").people] == [second.token]


def test_moving_someone_to_the_front(panel, rooms, visits, reports):
    """The third in line becomes the first; audited as 3->1."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 4)  # one seated, three waiting
    third = reports.line("hall").people[2]
    page = panel.page(ROOM)
    assert f'Move to front<span class="sr-only">: {third.name} ({third.code})</span>' in page
    response = panel.post(f"{ROOM}/people/{third.code}/front")
    assert f"Moved {third.name} ({third.code}) to the front of the line." in panel.flashed(response)
    assert reports.line("hall").people[0].token == third.token
    entry = newest(reports, "move")
    assert (entry.who, entry.code, entry.detail) == ("ada", third.code, "3->1")


def test_removing_someone_in_line_and_ending_a_seat(panel, rooms, visits, reports):
    """Remove ends a place, "End seat" a seat; both audited with the admin's name."""
    rooms.configure("hall", {"capacity": 1})
    seated, waiting = line_of(visits, 2)
    page = panel.page(ROOM)
    assert f'Remove<span class="sr-only"> P1 ({waiting.support_code})</span>' in page
    assert f'End seat<span class="sr-only"> of P0 ({seated.support_code})</span>' in page
    response = panel.post(f"{ROOM}/people/{waiting.support_code}/remove")
    assert f"Removed P1 ({waiting.support_code}) from the line." in panel.flashed(response)
    response = panel.post(f"{ROOM}/people/{seated.support_code}/remove")
    assert f"Ended the seat of P0 ({seated.support_code})." in panel.flashed(response)
    assert reports.summary("hall").active == 0 and reports.summary("hall").waiting == 0
    removals = reports.audit("hall", 10, ["remove"])
    assert [(e.who, e.code, e.detail) for e in removals] == [
        ("ada", seated.support_code, "admitted"),
        ("ada", waiting.support_code, "waiting"),
    ]


def test_acting_on_someone_who_left_is_a_flash_error(panel, rooms, visits, reports):
    """A support code no longer known: nothing changed, said on the page."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 2)
    before = reports.audit("hall", 10)
    for action in ("admit", "front", "remove"):
        response = panel.post(f"{ROOM}/people/ZZZZZZ/{action}")
        assert response.location == ROOM
        assert "Nothing changed: nobody with the support code ZZZZZZ" in panel.flashed(response)
    assert reports.audit("hall", 10) == before


def test_the_page_and_search_survive_an_action(panel, rooms, visits, reports):
    """After an action on page 2 of the line (or in a search) the redirect comes back there."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 60)
    person = reports.line("hall", 55).people[0]
    response = panel.post(f"{ROOM}/people/{person.code}/front", page="2")
    assert response.location == f"{ROOM}?page=2"
    response = panel.post(f"{ROOM}/people/{person.code}/remove", q="P5")
    assert response.location == f"{ROOM}?q=P5"


# -- notices ------------------------------------------------------------------


def test_broadcasting_and_clearing_the_notice(panel, rooms, visits, reports):
    """The notice reaches the waiting page; Clear takes it away; both audited."""
    rooms.configure("hall", {"capacity": 1})
    response = panel.post(f"{ROOM}/notice", text="  Doors   at ten  ")
    assert "Broadcast the notice: “Doors at ten”" in panel.flashed(response)
    assert reports.summary("hall").notice == "Doors at ten"
    assert visits.join("hall", identity="v").ticket.notice == "Doors at ten"
    assert newest(reports, "notice").who == "ada"
    page = panel.page(ROOM)
    assert "Shown now: “Doors at ten”" in page and "Clear the notice" in page
    cleared = panel.post(f"{ROOM}/notice", text="ignored", clear="1")
    assert "Cleared the notice." in panel.flashed(cleared)
    assert reports.summary("hall").notice == "" and newest(reports, "notice_cleared").who == "ada"


@pytest.mark.parametrize(
    ("text", "message"),
    [("x" * 281, "A notice is at most 280 characters; this one has 281."),
     ("   ", "Type the notice to broadcast, or clear the notice.")],
)  # fmt: skip
def test_a_bad_notice_is_a_400(panel, rooms, reports, text, message):
    """Too long or empty: the page with the error, the text kept, nothing broadcast."""
    rooms.configure("hall", {})
    response = panel.post(f"{ROOM}/notice", text=text)
    page = response.get_data(as_text=True)
    assert response.status_code == 400 and page.count(message) == 2
    assert f">{text}</textarea>" in page
    assert reports.audit("hall", 10, ["notice"]) == []


# -- reading a room -----------------------------------------------------------


def test_the_line_is_paged_fifty_at_a_time(panel, rooms, visits, clock):
    """Positions, time waited and support codes; page 3 holds 101 to 120."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 3600})
    people = line_of(visits, 121)
    clock.advance(125)
    page = panel.page(ROOM)
    assert "People 1 to 50 of 120 in line" in page
    assert people[1].support_code in page and people[51].support_code not in page
    assert "2 min 05 s" in page and 'id="line-next" href="/admin/rooms/hall?page=2"' in page
    last = panel.page(f"{ROOM}?page=3")
    assert "People 101 to 120 of 120 in line" in last and people[120].support_code in last
    assert 'id="line-next"' not in last and "Page 3 of 3" in last
    beyond = panel.page(f"{ROOM}?page=9")
    assert "Page 3 of 3" in beyond
    partial = panel.client.get(
        f"{ROOM}?page=2", headers={"HX-Request": "true", "HX-Target": "line"}
    )
    text = partial.get_data(as_text=True)
    assert text.lstrip().startswith('<section id="line"') and "<html" not in text
    assert "People 51 to 100 of 120 in line" in text and 'name="page" value="2"' in text


def test_searching_by_name_or_support_code(panel, rooms, visits):
    """A name part finds everyone with it; a support code finds its holder."""
    rooms.configure("hall", {"capacity": 1})
    line_of(visits, 3, names="Ann")
    line_of(visits, 3, names="Bob")
    bob = visits.join("hall", identity="Bob1").ticket
    page = panel.page(f"{ROOM}?q=bob")
    assert "3 people match “bob”" in page and "Ann1" not in page
    by_code = panel.page(f"{ROOM}?q={bob.support_code.lower()}")
    assert "1 person matches" in by_code and "Bob1" in by_code
    nobody = panel.page(f"{ROOM}?q=zed")
    assert "Nobody in line or in the room matches “zed”." in nobody


def test_who_is_in_the_room_with_seat_time_and_connection(panel, rooms, visits, clock):
    """Seated people with how long and whether a room socket is open."""
    rooms.configure("hall", {"capacity": 2})
    ann, _ = line_of(visits, 2)
    rooms.presence("hall", ann.token, "open", 30)
    clock.advance(75)
    page = panel.page(ROOM)
    seated = page[page.index('id="seated"') :]
    assert "2 in the room; 2 of 2 seats taken" in seated and "1 min 15 s" in seated
    assert seated.count("conn conn-on") == 1 and seated.count("conn conn-off") == 1


def points(svg: str) -> int:
    """The samples a chart draws: polyline vertices and lone dots."""
    lines = sum(
        len(p.split()) for p in re.findall(r'<polyline class="series" points="([^"]*)"', svg)
    )
    return lines + svg.count('<circle class="dot-point"')


def test_charts_draw_the_last_hour_and_the_last_day(panel, rooms, app, r, clock):
    """Six SVG charts: 60 points for the hour, 144 for the day; a gap where no sample."""
    rooms.configure("hall", {})
    history = app.extensions["services"].keys.room("hall").history
    minute = int(clock() // 60)
    samples = {f"{m}:w": 10 + m % 7 for m in range(minute - 1439, minute + 1) if m != minute - 30}
    samples.update({f"{m}:s": 3 for m in range(minute - 59, minute + 1)})
    r.hset(history, mapping={**samples, f"{minute}:admitted": 4})
    page = panel.page(ROOM)
    svgs = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.S)
    assert len(svgs) == 6  # line, seats, admissions x hour, day (no accuracy data: no scatter)
    line_hour, seats_hour, admitted_hour, line_day, seats_day, admitted_day = svgs
    assert points(line_hour) == 59 and line_hour.count("<polyline") == 2  # the gap
    assert points(seats_hour) == 60 and points(admitted_hour) == 60
    assert points(line_day) == 144 and points(admitted_day) == 144
    assert points(seats_day) == 6  # the last hour's samples only
    assert "4 at " in page  # the summary sentence of the admissions
    assert "The numbers behind the charts of the last hour" in page
    assert 'aria-hidden="true"' in line_hour  # the caption says it in words


def test_estimate_accuracy_with_its_chart(panel, rooms, visits, clock):
    """Scored admissions, the median error, the share inside the range, a scatter."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 3600, "typical_stay_seconds": None})
    seated, waiting = line_of(visits, 2)  # no estimate at the join: nothing measured, no typical
    rooms.predict("hall", waiting.token, 100.0, 80.0, 150.0)
    clock.advance(120)
    visits.remove("hall", seated.token, who="ada")  # the seat goes to the one waiting
    page = panel.page(ROOM)
    table = page[
        page.index('id="accuracy-caption"') : page.index("</table>", page.index("accuracy"))
    ]
    assert table.count(">1<") == 2  # scored in the last hour and the last day
    assert "17 %" in table and "100 %" in table  # |100 - 120| / 120; 120 inside 80-150
    scatter = page[page.index("Estimated against actual wait") :]
    assert scatter.count('<circle class="dot-point"') == 1


def test_every_panel_time_is_in_the_admins_zone(panel, rooms, visits, clock):
    """With the admin's zone known (Europe/Berlin), "Figures as of", the charts' times
    and the audit log are in it, named, with UTC on hover; nothing says UTC alone."""
    panel.client.set_cookie("panel_tz", "Europe/Berlin", path="/admin")
    rooms.configure("hall", {"capacity": 1}, who="ada")
    line_of(visits, 2)
    at = clock()
    berlin = datetime.fromtimestamp(at, ZoneInfo("Europe/Berlin"))
    page = panel.page(ROOM)
    figures = re.search(r"Figures as of (<time[^>]*>[^<]*</time>)", page)
    assert figures is not None
    assert f">{berlin:%H:%M} {berlin:%Z}</time>" in figures[1]
    assert f'title="{datetime.fromtimestamp(at, UTC):%Y-%m-%d %H:%M:%S} UTC"' in figures[1]
    assert "(UTC)" not in page and "Times in UTC" not in page
    assert re.search(r'<th scope="row"><time [^>]*>\d\d:\d\d C[E]S?T</time></th>', page)
    audit = panel.page(f"{ROOM}/audit")
    assert f">{berlin:%Y-%m-%d %H:%M}" in audit and "times in UTC" not in audit


def test_the_audit_log_filters_and_exports(panel, rooms, visits, reports):
    """Every entry with time, kind, who, code, name, detail; a kind filter; CSV as the API."""
    rooms.configure("hall", {"capacity": 1}, who="ada")
    _, waiting = line_of(visits, 2)
    visits.move("hall", waiting.token, 1, who="ada")
    visits.notice("hall", "=cmd()", who="bob")
    page = panel.page(f"{ROOM}/audit")
    for words in ("Room created", "Admitted", "Moved in line", "Notice broadcast", "bob"):
        assert words in page
    assert waiting.support_code in page and "from place 1 to 1" in page
    filtered = panel.page(f"{ROOM}/audit?kind=notice")
    assert "=cmd()" in filtered and "Room created</td>" not in filtered
    assert '<option value="notice" selected>' in filtered
    assert 'href="/admin/rooms/hall/audit.csv?kind=notice"' in filtered
    bad = panel.client.get(f"{ROOM}/audit?kind=nonsense")
    assert bad.status_code == 400 and "Choose a kind from the list." in bad.get_data(as_text=True)
    export = panel.client.get(f"{ROOM}/audit.csv?kind=notice")
    assert export.mimetype == "text/csv"
    assert export.headers["Content-Disposition"] == 'attachment; filename="audit-hall.csv"'
    rows = list(csv.reader(io.StringIO(export.get_data(as_text=True))))
    assert rows[0] == ["Time", "Kind", "Who", "Support code", "Name", "Detail", "Customer"]
    assert len(rows) == 2 and rows[1][1:] == ["Notice broadcast", "bob", "", "", "'=cmd()", ""]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", rows[1][0])


def test_the_audit_csv_speaks_as_the_panel(panel, rooms, visits):
    """ISO 8601 times in the admin's zone, the kinds and details in the panel's words
    and units: "Room created", "Capacity 1; Check-in window 45 seconds", never a
    Unix time or a JSON array of internal names."""
    panel.client.set_cookie("panel_tz", "Europe/Berlin", path="/admin")
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 45}, who="ada")
    line_of(visits, 1)
    export = panel.client.get(f"{ROOM}/audit.csv")
    rows = list(csv.reader(io.StringIO(export.get_data(as_text=True))))
    by_kind = {row[1]: row for row in rows[1:]}
    created = by_kind["Room created"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0[12]:00", created[0])
    assert "Capacity 1" in created[5] and "[" not in created[5]
    assert "Check-in window 45 seconds" in created[5]
    assert by_kind["Admitted"][5] == "on joining (a seat was free)"


@pytest.mark.parametrize("path", [ROOM, f"{ROOM}?page=2", f"{ROOM}/audit", f"{ROOM}/audit.csv",
                                  "/admin/rooms/NOT-A-NAME", "/admin/rooms/hall?q=x"])  # fmt: skip
def test_an_unknown_room_is_a_friendly_404(panel, path):
    """No such room: 404 with a way back to the rooms."""
    response = panel.client.get(path)
    text = response.get_data(as_text=True)
    assert response.status_code == 404
    assert "There is no room named" in text and 'href="/admin/"' in text


def test_actions_on_an_unknown_room_go_back_to_the_rooms(panel, rooms):
    """The engine's refusal (RoomNotFound): a flash error on the overview, nothing made."""
    for path, form in [(f"{ROOM}/admit", {"count": "1"}), (f"{ROOM}/notice", {"text": "hi"}),
                       (f"{ROOM}/status", {"status": "open"}), (f"{ROOM}/settings", {}),
                       (f"{ROOM}/people/ABC123/remove", {})]:  # fmt: skip
        response = panel.post(path, **form)
        assert response.location == "/admin/", path
        assert "Nothing changed: No room named &#39;hall&#39;." in panel.flashed(response)
    assert rooms.names() == []


# -- the chart helper ---------------------------------------------------------


def test_binning_keeps_gaps_and_rates():
    """Means of the samples (None if none), rates as totals per original step."""
    values = [9.0, 1.0, 2.0, None, None, None, None]
    assert charts.binned(values, 3) == [1.5, None]  # groups end with the last value
    assert charts.binned([1.0, 2.0, 3.0, 4.0], 2) == [1.5, 3.5]
    assert charts.binned([0.0, 6.0, 3.0, 3.0], 2, rate=True) == [3.0, 3.0]


def test_a_line_chart_breaks_at_missing_samples():
    """Runs of samples are polylines, a lone sample a dot; the summary says the latest."""
    times = [0.0, 60.0, 120.0, 180.0, 240.0]
    chart = charts.line_chart(times, [1.0, 2.0, None, 7.0, None], "In line", "people")
    assert chart.svg.count("<polyline") == 1 and chart.svg.count("<circle") == 1
    assert chart.summary == "7 people at 00:03, up from 1 at 00:00; highest 7 at 00:03."
    empty = charts.line_chart(times, [None] * 5, "In line")
    assert "<polyline" not in empty.svg and empty.summary == "No samples yet."
    assert [charts.nice_ceiling(v) for v in (0, 3, 12, 51)] == [1.0, 5.0, 20.0, 100.0]


# -- issue 35: the panel's own words ----------------------------------------------


def test_end_clears_the_line_is_a_checkbox(panel, rooms):
    """A yes or no is a checkbox: ticked saves 1 ("off → on"), unticked saves 0."""
    rooms.configure("hall", {"capacity": 1})
    page = panel.page(ROOM)
    box = re.search(r'<input id="setting-ends_at_clears_line"[^>]*>', page)
    assert box is not None and 'type="checkbox"' in box[0] and "checked" not in box[0]
    ticked = panel.post(f"{ROOM}/settings", ends_at_clears_line=["1", "0"])
    assert "End clears the line off → on" in panel.flashed(ticked)
    assert rooms.find_settings("hall").ends_at_clears_line == 1
    assert (
        "checked"
        in re.search(r'<input id="setting-ends_at_clears_line"[^>]*>', panel.page(ROOM))[0]
    )
    unticked = panel.post(f"{ROOM}/settings", ends_at_clears_line="0")
    assert "End clears the line on → off" in panel.flashed(unticked)
    assert rooms.find_settings("hall").ends_at_clears_line == 0


def test_an_offer_says_its_whole_window(panel, rooms, visits):
    """An offer's time left is shown with its window, as the help says it: one truth."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 30})
    first, _ = line_of(visits, 2)
    visits.end("hall", first.token)
    page = panel.page(ROOM)
    assert "each has the check-in window (30 seconds)" in page
    assert re.search(r'data-label="Lapses in">\d+ s of 30 s<', page)


@pytest.mark.parametrize("path", ["/admin/", ROOM, f"{ROOM}/audit"])
def test_every_panel_page_says_mail_cannot_be_sent(panel, rooms, app, path):
    """While no SMTP server answers (or no mailer checks), every panel page says so."""
    from tests.web.conftest import mailer_says

    rooms.configure("hall", {})
    assert "no mailer has checked its SMTP server lately" in panel.page(path)
    mailer_says(app, ok=False, error="connection refused")
    assert "Mail cannot be sent: no SMTP server answers at 127.0.0.1:25" in panel.page(path)
    mailer_says(app, ok=True)
    assert "Mail cannot be sent" not in panel.page(path)


def test_the_empty_lobby_names_the_panel(app):
    """No rooms yet: the lobby says they are made in the admin panel (linked) or the API."""
    page = app.test_client().get("/").get_data(as_text=True)
    assert 'in the admin panel (<a href="/admin/">/admin/</a>) or through the API' in page
