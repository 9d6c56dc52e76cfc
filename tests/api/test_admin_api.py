"""The admin JSON API of issue 11: the rooms overview, manual admission, admit, remove,
move, the notice and the audit log (JSON and CSV), as docs/api.md describes them."""

from __future__ import annotations

import csv
import io
import json
import re
from importlib import resources

import pytest

DOCUMENT = json.loads(resources.files("webapp").joinpath("openapi.json").read_text())
SCHEMAS = DOCUMENT["components"]["schemas"]
SUPPORT_CODE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{6}$")  # Crockford's base 32
ROOM = "queue"
# Every admin operation: method, path (<token>: someone waiting in ROOM), a valid body.
OPERATIONS = [
    ("GET", "/api/admin/rooms", None),
    ("PUT", f"/api/admin/rooms/{ROOM}", {"capacity": 3}),
    ("GET", f"/api/admin/rooms/{ROOM}", None),
    ("DELETE", f"/api/admin/rooms/{ROOM}", None),
    ("POST", f"/api/admin/rooms/{ROOM}/admit", {"count": 1}),
    ("POST", f"/api/admin/rooms/{ROOM}/remove/<token>", None),
    ("POST", f"/api/admin/rooms/{ROOM}/move/<token>", {"to": 1}),
    ("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": "hello"}),
    ("GET", f"/api/admin/rooms/{ROOM}/audit", None),
]
OPERATION_IDS = [f"{method} {path}" for method, path, _ in OPERATIONS]
# Each operation that names a room, with that room unknown.
ROOM_OPERATIONS = [
    ("POST", "/api/admin/rooms/{room}/admit", {"count": 1}),
    ("POST", "/api/admin/rooms/{room}/remove/some-ticket", None),
    ("POST", "/api/admin/rooms/{room}/move/some-ticket", {"to": 1}),
    ("POST", "/api/admin/rooms/{room}/notice", {"text": "hello"}),
    ("GET", "/api/admin/rooms/{room}/audit", None),
]


@pytest.fixture
def manual_room(make_room):
    """A manual room of two seats."""
    return make_room(ROOM, capacity=2, admission_mode="manual")


@pytest.fixture
def line(client):
    """Joins ``people`` into a room; their join replies, in order."""

    def join(people, room=ROOM, name=""):
        replies = []
        for i in range(people):
            response = client.post(f"/api/rooms/{room}/join", json={"name": f"{name}{i}"})
            assert response.status_code == 200, response.get_json()
            replies.append(response.get_json())
        return replies

    return join


@pytest.fixture
def call(client, admin):
    """An admin call: method, path, JSON body; with the admin token unless told."""

    def send(method, path, body=None, headers=admin, **kwargs):
        if body is not None:
            kwargs["json"] = body
        return client.open(path, method=method, headers=headers, **kwargs)

    return send


@pytest.fixture
def audit(call):
    """The room's audit log as JSON, newest first (query: kind, count)."""

    def read(room=ROOM, **query):
        response = call("GET", f"/api/admin/rooms/{room}/audit", query_string=query)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    return read


def raw(value):
    """Request arguments that send ``value`` as the JSON body, whatever it is (null too)."""
    return {"data": json.dumps(value), "content_type": "application/json"}


def check_in(client, token, room=ROOM):
    return client.get(f"/api/rooms/{room}/position/{token}")


def states(client, tokens, room=ROOM):
    """Each ticket's (status, position) as its check-in reports it."""
    out = []
    for token in tokens:
        body = check_in(client, token, room).get_json()
        out.append((body["status"], body["position"]))
    return out


def qsize(client, room=ROOM):
    return client.get(f"/api/rooms/{room}/qsize").get_json()


# -- the rooms overview ------------------------------------------------------------


def test_overview_has_every_room_with_settings_and_figures(client, call, make_room, line, clock):
    """GET /api/admin/rooms: every room by name, its settings, seats, line, per-minute
    figures over 10 minutes, the wait at the back and the notice."""
    make_room("b-room", capacity=1, dropout_seconds=30)
    make_room("a-room", capacity=4, admission_mode="manual", typical_stay_seconds=None)
    line(3, room="b-room")  # one seated at once, two waiting
    line(2, room="a-room")
    call("POST", "/api/admin/rooms/a-room/notice", {"text": "Doors open at 8"})
    clock.advance(31)
    assert len(line(1, room="b-room")) == 1  # its join settles the room: two drop out
    rooms = call("GET", "/api/admin/rooms").get_json()
    assert [room["name"] for room in rooms] == ["a-room", "b-room"]
    a, b = rooms
    assert set(a) == set(SCHEMAS["RoomOverview"]["properties"])
    assert set(SCHEMAS["Room"]["properties"]) <= set(a)
    assert (a["capacity"], a["admission_mode"], a["status"]) == (4, "manual", "open")
    assert (a["active"], a["waiting"], a["notice"]) == (0, 2, "Doors open at 8")
    assert (a["joined_per_minute"], a["admitted_per_minute"]) == (0.2, 0.0)
    assert (b["active"], b["waiting"], b["notice"]) == (1, 1, None)
    assert (b["joined_per_minute"], b["admitted_per_minute"]) == (0.4, 0.1)
    assert b["dropped_per_minute"] == 0.2
    assert a["wait_at_back"] is None  # nothing observed yet, no typical stay: unknown
    clock.advance(600)
    assert call("GET", "/api/admin/rooms").get_json()[1]["joined_per_minute"] == 0.0


def test_overview_of_no_rooms_is_empty(call):
    """No rooms: an empty list."""
    assert call("GET", "/api/admin/rooms").get_json() == []


# -- manual admission --------------------------------------------------------------


def test_a_manual_room_seats_nobody_by_itself(app, client, call, manual_room, line, clock):
    """In a manual room joiners wait though seats are free, at every check-in and sweep;
    switching it to auto lets the head of the line in at once."""
    people = line(3)
    assert {(p["status"], p["active"]) for p in people} == {("waiting", 0)}
    tokens = [p["token"] for p in people]
    for _ in range(3):
        clock.advance(10)
        assert states(client, tokens) == [("waiting", 1), ("waiting", 2), ("waiting", 3)]
        app.extensions["services"].visits.sweep(ROOM)
    assert qsize(client) == {"len": 3, "active": 0, "capacity": 2}
    call("PUT", f"/api/admin/rooms/{ROOM}", {"admission_mode": "auto"})
    assert states(client, tokens) == [("admitted", 0), ("admitted", 0), ("waiting", 1)]


def test_admit_offers_seats_to_the_head_of_the_line(client, call, manual_room, line, audit):
    """Admit lets the next count in, in line order; each claims the seat at check-in; the
    audit log names each admission as the API's, with the support code."""
    people = line(4, name="P")
    response = call("POST", f"/api/admin/rooms/{ROOM}/admit", {"count": 2, "request_id": "r1"})
    assert response.status_code == 200
    assert response.get_json() == {"admitted": [p["token"] for p in people[:2]], "replay": False}
    tokens = [p["token"] for p in people]
    seated, waiting = [("admitted", 0)] * 2, [("waiting", 1), ("waiting", 2)]
    assert states(client, tokens) == seated + waiting
    admits = audit(kind="admit")
    assert [(e["kind"], e["who"], e["detail"]) for e in admits] == [("admit", "api", "line")] * 2
    assert [(e["code"], e["name"]) for e in admits] == [
        (people[1]["support_code"], "P1"),
        (people[0]["support_code"], "P0"),
    ]


def test_admit_holds_capacity_unless_overridden(client, call, manual_room, line):
    """Without override_capacity only free seats are given; with it, past capacity."""
    tokens = [reply["token"] for reply in line(5)]
    admit = f"/api/admin/rooms/{ROOM}/admit"
    assert call("POST", admit, {"count": 5}).get_json()["admitted"] == tokens[:2]
    assert call("POST", admit, {"count": 5}).get_json()["admitted"] == []
    assert call("POST", admit, {"count": 1, "override_capacity": False}).get_json() == {
        "admitted": [],
        "replay": False,
    }
    overridden = call("POST", admit, {"count": 2, "override_capacity": True}).get_json()
    assert overridden == {"admitted": tokens[2:4], "replay": False}
    assert qsize(client) == {"len": 1, "active": 4, "capacity": 2}


def test_admit_stops_at_the_end_of_the_line(call, manual_room, line):
    """Asking for more than wait admits those there are."""
    tokens = [reply["token"] for reply in line(1)]
    reply = call("POST", f"/api/admin/rooms/{ROOM}/admit", {"count": 2.0}).get_json()
    assert reply == {"admitted": tokens, "replay": False}


def test_replaying_a_request_id_admits_nobody(client, call, manual_room, line, audit):
    """The same request_id again answers as the first time, with replay true, and admits
    nobody new, whatever its count; another request_id admits again."""
    tokens = [reply["token"] for reply in line(4)]
    admit = f"/api/admin/rooms/{ROOM}/admit"
    first = call("POST", admit, {"count": 1, "request_id": "batch-7"}).get_json()
    assert first == {"admitted": tokens[:1], "replay": False}
    for body in ({"count": 1}, {"count": 3, "override_capacity": True}):
        again = call("POST", admit, {**body, "request_id": "batch-7"}).get_json()
        assert again == {"admitted": tokens[:1], "replay": True}
    assert qsize(client) == {"len": 3, "active": 1, "capacity": 2}
    assert len(audit(kind="admit")) == 1
    other = call("POST", admit, {"count": 1, "request_id": "batch-8"}).get_json()
    assert other == {"admitted": tokens[1:2], "replay": False}


def test_an_empty_request_id_is_none(call, manual_room, line):
    """request_id "" (the default) is no key: each request admits."""
    tokens = [reply["token"] for reply in line(2)]
    admit = f"/api/admin/rooms/{ROOM}/admit"
    assert call("POST", admit, {"request_id": ""}).get_json()["admitted"] == tokens[:1]
    assert call("POST", admit, {"request_id": ""}).get_json()["admitted"] == tokens[1:]


@pytest.mark.parametrize(
    "body",
    [{"count": 0}, {"count": -1}, {"count": 10_001}, {"count": "2"}, {"count": 2.5},
     {"count": True}, {"count": None}, {"request_id": 5}, {"request_id": None},
     {"request_id": ["a"]}, {"request_id": "x" * 129}, {"override_capacity": "true"},
     {"override_capacity": 1}, {"override_capacity": None}, [], "text", 3, None],
)  # fmt: skip
def test_bad_admissions_are_refused(client, call, manual_room, line, audit, body):
    """A bad count, request_id or override_capacity, or a body that is no JSON object,
    gets 400 naming it, and admits nobody."""
    line(2)
    response = call("POST", f"/api/admin/rooms/{ROOM}/admit", **raw(body))
    assert response.status_code == 400
    if isinstance(body, dict):
        assert next(iter(body)) in response.get_json()["error"]
    assert qsize(client)["active"] == 0
    assert audit(kind="admit") == []


def test_admit_needs_a_body(call, manual_room):
    """No body at all is a 400; {} admits one."""
    assert call("POST", f"/api/admin/rooms/{ROOM}/admit").status_code == 400
    assert call("POST", f"/api/admin/rooms/{ROOM}/admit", {}).status_code == 200


def test_a_request_id_of_128_characters_is_accepted(call, manual_room, line):
    """request_id may be up to 128 characters of any text."""
    line(1)
    body = {"request_id": "é" * 128}
    assert call("POST", f"/api/admin/rooms/{ROOM}/admit", body).status_code == 200


# -- remove and move ---------------------------------------------------------------


@pytest.mark.parametrize("seated", [False, True])
def test_remove_ends_the_ticket_and_is_audited(client, call, manual_room, line, audit, seated):
    """Remove ends a waiting or seated ticket: its next check-in gets 410 saying an admin
    removed it; audited with who, support code, name and the state it had."""
    person = line(1, name="Ada")[0]
    if seated:
        call("POST", f"/api/admin/rooms/{ROOM}/admit", {})
        check_in(client, person["token"])
    response = call("POST", f"/api/admin/rooms/{ROOM}/remove/{person['token']}")
    assert response.status_code == 200
    assert response.get_json() == {"token": person["token"], "status": "removed"}
    gone = check_in(client, person["token"])
    assert gone.status_code == 410
    assert "an admin removed you" in gone.get_json()["error"]
    assert qsize(client) == {"len": 0, "active": 0, "capacity": 2}
    [entry] = audit(kind="remove")
    detail = "admitted" if seated else "waiting"
    code = person["support_code"]
    expected = {"kind": "remove", "who": "api", "code": code, "name": "Ada0", "detail": detail}
    assert {field: entry[field] for field in expected} == expected


def test_removing_an_ended_ticket_answers_the_same(call, manual_room, line, audit):
    """Remove is idempotent: again, or after the visitor left, 200 and nothing recorded."""
    left, removed = (reply["token"] for reply in line(2))
    call("POST", f"/api/rooms/{ROOM}/leave/{left}")
    call("POST", f"/api/admin/rooms/{ROOM}/remove/{removed}")
    for token in (removed, left):
        response = call("POST", f"/api/admin/rooms/{ROOM}/remove/{token}")
        assert response.status_code == 200
        assert response.get_json() == {"token": token, "status": "removed"}
    assert len(audit(kind="remove")) == 1


def test_move_puts_a_waiting_ticket_elsewhere_in_line(client, call, manual_room, line, audit):
    """Move to 1 puts the ticket at the front, others keep their order; a place past the
    back is the back; {} is the front. Audited as old->new with the support code."""
    people = line(4, name="P")
    tokens = [p["token"] for p in people]
    move = f"/api/admin/rooms/{ROOM}/move/"
    response = call("POST", move + tokens[3], {"to": 1})
    assert response.status_code == 200
    assert response.get_json() == {"token": tokens[3], "position": 1}
    assert [pos for _, pos in states(client, tokens)] == [2, 3, 4, 1]
    assert call("POST", move + tokens[3], {"to": 99}).get_json()["position"] == 4
    assert call("POST", move + tokens[2], {"to": 2.0}).get_json()["position"] == 2
    assert call("POST", move + tokens[1], {}).get_json()["position"] == 1
    assert [pos for _, pos in states(client, tokens)] == [2, 1, 3, 4]
    entries = audit(kind="move")
    assert [(e["code"], e["detail"]) for e in entries] == [
        (people[1]["support_code"], "3->1"),
        (people[2]["support_code"], "3->2"),
        (people[3]["support_code"], "1->4"),
        (people[3]["support_code"], "4->1"),
    ]
    assert {(e["kind"], e["who"]) for e in entries} == {("move", "api")}
    assert call("POST", f"/api/admin/rooms/{ROOM}/admit", {}).get_json()["admitted"] == [tokens[1]]


@pytest.mark.parametrize(
    "body",
    [{"to": 0}, {"to": -3}, {"to": 10_000_001}, {"to": "1"}, {"to": 1.5}, {"to": True},
     {"to": None}, {"to": [1]}, [], "text", None],
)  # fmt: skip
def test_bad_moves_are_refused(client, call, manual_room, line, audit, body):
    """A bad `to`, or a body that is no JSON object, gets 400 and moves nobody."""
    tokens = [reply["token"] for reply in line(2)]
    response = call("POST", f"/api/admin/rooms/{ROOM}/move/{tokens[1]}", **raw(body))
    assert response.status_code == 400
    assert states(client, tokens) == [("waiting", 1), ("waiting", 2)]
    assert audit(kind="move") == []


def test_move_needs_a_body(call, manual_room, line):
    """No body at all is a 400."""
    token = line(1)[0]["token"]
    assert call("POST", f"/api/admin/rooms/{ROOM}/move/{token}").status_code == 400


@pytest.mark.parametrize("state", ["offered", "admitted"])
def test_moving_someone_not_waiting_is_a_conflict(client, call, manual_room, line, state):
    """A ticket offered a seat or holding one cannot be moved: 409."""
    token = line(1)[0]["token"]
    call("POST", f"/api/admin/rooms/{ROOM}/admit", {})
    if state == "admitted":
        check_in(client, token)
    response = call("POST", f"/api/admin/rooms/{ROOM}/move/{token}", {"to": 1})
    assert response.status_code == 409
    assert "not waiting" in response.get_json()["error"]


@pytest.mark.parametrize("why", ["left", "removed", "dropped"])
def test_moving_an_ended_ticket_is_gone(call, manual_room, line, clock, why):
    """A ticket that ended cannot be moved: 410 saying why it ended."""
    token = line(1)[0]["token"]
    if why == "left":
        call("POST", f"/api/rooms/{ROOM}/leave/{token}")
    elif why == "removed":
        call("POST", f"/api/admin/rooms/{ROOM}/remove/{token}")
    else:
        clock.advance(31)
    response = call("POST", f"/api/admin/rooms/{ROOM}/move/{token}", {"to": 1})
    assert response.status_code == 410
    assert "this ticket has ended" in response.get_json()["error"]


@pytest.mark.parametrize("action", ["remove", "move"])
def test_an_unknown_ticket_is_not_found(call, manual_room, line, action):
    """A token the room does not know, or another room's, gets 404."""
    call("PUT", "/api/admin/rooms/other", {})
    other = line(1, room="other")[0]["token"]
    for token in ("no-such-ticket", other):
        response = call("POST", f"/api/admin/rooms/{ROOM}/{action}/{token}", {"to": 1})
        assert response.status_code == 404
        assert response.get_json()["error"] == "no such ticket in this room"


# -- the notice --------------------------------------------------------------------


def test_the_notice_reaches_joins_and_check_ins(client, call, manual_room, line, audit):
    """A notice is stored with its spaces folded; join and check-in replies carry it,
    and null once cleared; both are audited."""
    token = line(1)[0]["token"]
    assert check_in(client, token).get_json()["notice"] is None
    response = call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": "  Doors \n open\t at  8 "})
    assert response.status_code == 200
    assert response.get_json() == {"notice": "Doors open at 8"}
    assert check_in(client, token).get_json()["notice"] == "Doors open at 8"
    assert line(1)[0]["notice"] == "Doors open at 8"
    cleared = call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": ""})
    assert cleared.get_json() == {"notice": None}
    assert check_in(client, token).get_json()["notice"] is None
    entries = audit(kind=["notice", "notice_cleared"])
    assert [(e["kind"], e["who"], e["code"], e["detail"]) for e in entries] == [
        ("notice_cleared", "api", "", ""),
        ("notice", "api", "", "Doors open at 8"),
    ]


@pytest.mark.parametrize("body", [{}, {"text": "   "}, {"text": "\n\t"}])
def test_an_empty_notice_clears_it(call, manual_room, body):
    """No text, or only spaces, clears the notice."""
    call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": "set"})
    response = call("POST", f"/api/admin/rooms/{ROOM}/notice", body)
    assert response.get_json() == {"notice": None}


def test_a_long_notice_keeps_280_characters(call, manual_room, line):
    """At most 280 characters are kept, counted after the spaces are folded."""
    text = "Doors   open " + "a" * 300
    kept = call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": text}).get_json()["notice"]
    assert kept == "Doors open " + "a" * 269
    assert line(1)[0]["notice"] == kept


@pytest.mark.parametrize(
    "body",
    [{"text": 5}, {"text": None}, {"text": ["a"]}, {"text": {"a": 1}}, {"text": True}, [],
     "text", None],
)  # fmt: skip
def test_a_notice_that_is_no_text_is_refused(call, manual_room, audit, body):
    """A text that is not a string, or a body that is no JSON object: 400, no change."""
    call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": "kept"})
    response = call("POST", f"/api/admin/rooms/{ROOM}/notice", **raw(body))
    assert response.status_code == 400
    assert call("GET", "/api/admin/rooms").get_json()[0]["notice"] == "kept"
    assert len(audit(kind="notice")) == 1


def test_the_public_room_list_carries_the_notice(client, call, manual_room):
    """GET /api/rooms names each room's notice, null when there is none."""
    assert client.get("/api/rooms").get_json()[0]["notice"] is None
    call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": "hi"})
    assert client.get("/api/rooms").get_json()[0]["notice"] == "hi"


# -- support codes -----------------------------------------------------------------


def test_join_and_check_in_carry_the_support_code(client, manual_room, line):
    """Each ticket has its own 6-character code, the same at every check-in."""
    people = line(5)
    codes = [p["support_code"] for p in people]
    assert all(SUPPORT_CODE.match(code) for code in codes), codes
    assert len(set(codes)) == 5
    for person in people:
        assert (
            check_in(client, person["token"]).get_json()["support_code"] == person["support_code"]
        )


def test_an_idempotent_join_keeps_its_support_code(client, manual_room):
    """Joining again with the same Idempotency-Key returns the same code."""
    headers = {"Idempotency-Key": "k-1"}
    one, again = (client.post(f"/api/rooms/{ROOM}/join", headers=headers).get_json() for _ in "ab")
    assert one["support_code"] == again["support_code"]


# -- the audit log -----------------------------------------------------------------


@pytest.fixture
def busy_room(call, make_room, line):
    """A room where every admin action happened once: created, a setting changed, a
    notice set, two admitted, one moved, one removed, the notice cleared; its people."""
    make_room(ROOM, capacity=2, admission_mode="manual")
    call("PUT", f"/api/admin/rooms/{ROOM}", {"dropout_seconds": 60})
    call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": '=HYPERLINK("x")'})
    people = line(5, name="@P")
    call("POST", f"/api/admin/rooms/{ROOM}/admit", {"count": 2})
    call("POST", f"/api/admin/rooms/{ROOM}/move/{people[4]['token']}", {"to": 1})
    call("POST", f"/api/admin/rooms/{ROOM}/remove/{people[3]['token']}")
    call("POST", f"/api/admin/rooms/{ROOM}/notice", {"text": ""})
    return people


def test_the_audit_log_is_newest_first(busy_room, audit):
    """Every action of the API is in the log, newest first, its who "api"."""
    people = busy_room
    entries = audit()
    assert set(entries[0]) == set(SCHEMAS["AuditEntry"]["properties"])
    summary = [(e["kind"], e["who"], e["code"], e["name"], e["detail"]) for e in entries]
    assert summary == [
        ("notice_cleared", "api", "", "", ""),
        ("remove", "api", people[3]["support_code"], "@P3", "waiting"),
        ("move", "api", people[4]["support_code"], "@P4", "3->1"),
        ("admit", "api", people[1]["support_code"], "@P1", "line"),
        ("admit", "api", people[0]["support_code"], "@P0", "line"),
        ("notice", "api", "", "", '=HYPERLINK("x")'),
        ("settings", "api", "", "", '[["dropout_seconds","30","60"]]'),
        ("create", "api", "", "", '[["capacity","10","2"],["admission_mode","auto","manual"]]'),
    ]
    ids = [e["id"] for e in entries]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(e["at"], float) for e in entries)


def test_the_room_s_own_admissions_are_the_engine_s(call, make_room, line, audit):
    """In an auto room, seats given on joining and as seats free are audited as the
    engine's: direct, then from the line."""
    make_room(ROOM, capacity=1)
    first, second = line(2, name="P")
    call("POST", f"/api/rooms/{ROOM}/leave/{first['token']}")
    admits = [(e["who"], e["code"], e["detail"]) for e in audit(kind="admit")]
    assert admits == [
        ("engine", second["support_code"], "line"),
        ("engine", first["support_code"], "direct"),
    ]


def test_the_audit_log_filters_by_kind_and_count(busy_room, audit):
    """?kind= keeps those kinds (repeatable; unknown: none; empty: ignored); ?count= the
    newest that many."""
    assert [e["kind"] for e in audit(kind="admit")] == ["admit", "admit"]
    kinds = [e["kind"] for e in audit(kind=["move", "remove", "create"])]
    assert kinds == ["remove", "move", "create"]
    assert audit(kind="nothing-like-it") == []
    assert len(audit(kind="")) == 8
    assert [e["kind"] for e in audit(count=2)] == ["notice_cleared", "remove"]
    assert [e["kind"] for e in audit(kind="admit", count=1)] == ["admit"]
    assert len(audit(count=5000)) == 8


def test_the_audit_log_as_csv(call, busy_room, audit):
    """?format=csv: an attachment whose rows are the JSON entries, cells that a
    spreadsheet would take for a formula prefixed with '."""
    response = call("GET", f"/api/admin/rooms/{ROOM}/audit", query_string={"format": "csv"})
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == f'attachment; filename="audit-{ROOM}.csv"'
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    header = ["id", "at", "kind", "who", "code", "name", "detail", "customer"]
    assert rows[0] == header

    def cell(value):
        text = str(value)
        return "'" + text if text[:1] in ("=", "+", "-", "@") else text

    assert rows[1:] == [[cell(entry[field]) for field in header] for entry in audit()]
    assert rows[6][6] == '\'=HYPERLINK("x")'
    assert rows[2][5] == "'@P3"
    query = {"format": "csv", "kind": "admit", "count": 1}
    filtered = call("GET", f"/api/admin/rooms/{ROOM}/audit", query_string=query)
    kinds = [row[2] for row in csv.reader(io.StringIO(filtered.get_data(as_text=True)))]
    assert kinds == ["kind", "admit"]


@pytest.mark.parametrize(
    "name",
    ["+1 555", "-1", "@SUM(A1)", "=1+1", "Ada",
     "\uff1d1+1", "\uff0b1", "\uff20SUM(A1)", "\ufe62\uff11", "\u207c1"],
)  # fmt: skip
def test_csv_cells_are_never_formulas(call, manual_room, name):
    """A cell starting with =, +, - or @ (here a display name), or with a character that
    Unicode NFKC makes one of them (fullwidth \uff1d, small \ufe62, superscript \u207c), is
    written with a leading ' in the CSV, so no spreadsheet runs it; the JSON keeps it."""
    token = call("POST", f"/api/rooms/{ROOM}/join", {"name": name}).get_json()["token"]
    call("POST", f"/api/admin/rooms/{ROOM}/remove/{token}")
    query = {"format": "csv", "kind": "remove"}
    response = call("GET", f"/api/admin/rooms/{ROOM}/audit", query_string=query)
    [_, row] = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    assert row[5] == (name if name[0].isalnum() else "'" + name)
    assert call("GET", f"/api/admin/rooms/{ROOM}/audit").get_json()[0]["name"] == name


@pytest.mark.parametrize(
    "query",
    [{"count": "0"}, {"count": "5001"}, {"count": "-1"}, {"count": "abc"}, {"count": "2.5"},
     {"count": ""}, {"count": "\uff11"}, {"format": "xml"}, {"format": ""}, {"format": "CSV"}],
)  # fmt: skip
def test_bad_audit_queries_are_refused(call, manual_room, query):
    """A count that is not a whole number 1..5000, or a format not json or csv: 400."""
    response = call("GET", f"/api/admin/rooms/{ROOM}/audit", query_string=query)
    assert response.status_code == 400
    assert next(iter(query)) in response.get_json()["error"]


# -- not found, no token, the throttle ---------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), ROOM_OPERATIONS)
@pytest.mark.parametrize("room", ["nowhere", "NOT-A-NAME", "a" * 65])
def test_an_unknown_room_is_not_found(call, method, path, body, room):
    """Every operation on a room that does not exist (or cannot) gets 404."""
    response = call(method, path.format(room=room), body)
    assert response.status_code == 404
    assert "no room named" in response.get_json()["error"]


@pytest.fixture
def target(manual_room, line):
    """Makes an operation's path concrete: someone waiting in the manual room."""
    people = line(2)

    def concrete(path):
        return path.replace("<token>", people[1]["token"])

    return concrete


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS, ids=OPERATION_IDS)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-admin-token"}, {"Authorization": "Basic dGVzdA=="},
     {"Authorization": "Bearer test-admin-token-and-more"}],
    ids=["none", "wrong", "basic", "longer"],
)  # fmt: skip
def test_every_operation_needs_the_token(call, target, method, path, body, headers):
    """Without the right token: 401 with WWW-Authenticate: Bearer, and nothing changes."""
    before = call("GET", "/api/admin/rooms").get_json()
    log = call("GET", f"/api/admin/rooms/{ROOM}/audit").get_json()
    response = call(method, target(path), body, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert response.get_json()["error"]
    assert call("GET", "/api/admin/rooms").get_json() == before
    assert call("GET", f"/api/admin/rooms/{ROOM}/audit").get_json() == log


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS, ids=OPERATION_IDS)
def test_no_operation_without_an_admin_token_set(app, call, target, method, path, body):
    """With WEBAPP_ADMIN_TOKEN unset, even the old token gets 401."""
    app.config["ADMIN_TOKEN"] = None
    response = call(method, target(path), body)
    assert response.status_code == 401
    assert "disabled" in response.get_json()["error"]


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS, ids=OPERATION_IDS)
def test_wrong_tokens_count_towards_the_throttle(app, call, target, method, path, body):
    """Wrong tokens on any operation are counted: past the limit, every admin call from
    that address gets 429 with Retry-After, the right token included."""
    path = target(path)
    app.config["ADMIN_FAILURE_LIMIT"] = "3 per hour"
    for _ in range(3):
        wrong = call(method, path, body, headers={"Authorization": "Bearer wrong-token"})
        assert wrong.status_code == 401
    for method_, path_, body_ in ((method, path, body), ("GET", "/api/admin/rooms", None)):
        response = call(method_, path_, body_)
        assert response.status_code == 429
        assert 3000 < int(response.headers["Retry-After"]) <= 3601
        assert "try again later" in response.get_json()["error"]
    elsewhere = call("GET", "/api/admin/rooms", environ_overrides={"REMOTE_ADDR": "127.0.0.2"})
    assert elsewhere.status_code == 200


def test_right_tokens_are_not_counted(app, call, manual_room, line):
    """An admin at work is never throttled: right tokens are not counted."""
    app.config["ADMIN_FAILURE_LIMIT"] = "3 per hour"
    line(5)
    for _ in range(5):
        assert call("POST", f"/api/admin/rooms/{ROOM}/admit", {}).status_code == 200
        assert call("GET", "/api/admin/rooms").status_code == 200


def test_remove_and_move_take_a_support_code(client, make_room, admin):
    """An admin can act on the code a visitor reads out, in any case."""
    make_room("codes", capacity=1, admission_mode="manual")
    first = client.post("/api/rooms/codes/join").get_json()
    second = client.post("/api/rooms/codes/join").get_json()
    moved = client.post(f"/api/admin/rooms/codes/move/{second['support_code'].lower()}",
                        json={"to": 1}, headers=admin)  # fmt: skip
    assert moved.status_code == 200 and moved.get_json() == {
        "token": second["token"],
        "position": 1,
    }
    gone = client.post(f"/api/admin/rooms/codes/remove/{first['support_code']}", headers=admin)
    assert gone.get_json()["token"] == first["token"]
    unknown = client.post("/api/admin/rooms/codes/remove/ZZZZZZ", headers=admin)
    assert unknown.status_code == 404 and "support code" in unknown.get_json()["error"]
