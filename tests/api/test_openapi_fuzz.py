"""Every operation of webapp/openapi.json fuzzed by schemathesis, in process through WSGI:
no 5xx but a documented 503, and every reply (status, headers, body) one the document
allows; valid input is accepted and invalid input refused.

schemathesis's pytest loader (``schemathesis.pytest.from_fixture``) does not run under
pytest 9 (it sets ``Item._nodeid``, which pytest 9 dropped), so each operation's cases
come from ``APIOperation.as_strategy`` under a plain ``@given`` and are checked with
``Case.validate_response``.
"""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi import checks

from tests.api.conftest import ADMIN
from webapp import create_app
from webapp.domain.drops import checked_request_id
from webapp.domain.emails import normalise_email
from webapp.domain.rooms import InvalidInput, clean_display_name
from webapp.domain.settings import BY_NAME, InvalidSetting
from webapp.domain.webhooks import InvalidEndpoint, check_url

DOCUMENT = json.loads(resources.files("webapp").joinpath("openapi.json").read_text())
OPERATIONS = [
    (method.upper(), path)
    for path, item in DOCUMENT["paths"].items()
    for method in ("get", "put", "post", "delete", "patch")
    if method in item
]
# The query parameters each operation names: others are ignored.
QUERY = {
    (method.upper(), path): {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
    for path, item in DOCUMENT["paths"].items()
    for method, op in item.items()
    if method in ("get", "put", "post", "delete", "patch")
}
ROOM = "launch"
# A manual room with people in line, made afresh for every request, so that admit, move
# and remove have someone to act on. IN_LINE in a generated request's path stands for
# the ticket at the back of its line.
MANUAL, IN_LINE = "queue", "in-line-ticket"
CHECKS = [
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.positive_data_acceptance,
    checks.negative_data_rejection,
]
# What counts as accepting valid input (the request was understood, though the room, the
# ticket or the credentials may still refuse it) and as refusing invalid input.
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "401", "404", "409", "410", "429", "503"]
            },
            "negative_data_rejection": {
                "expected-statuses": ["400", "401", "404", "409", "410", "413", "429"]
            },
        }
    }
)
# The admin throttle (ADMIN_FAILURE_LIMIT), drawn per request: lenient, so the right token
# gets through after many generated wrong ones; or strict, so 429s are checked too.
LENIENT, STRICT = "10000 per hour", "3 per hour"
# The room's state, drawn per request: open, closed (409 to a join), or with a line that
# is soon full (503 with Retry-After).
ROOM_STATES = [
    {"status": "open", "max_line_length": None},
    {"status": "closed", "max_line_length": None},
    {"status": "open", "max_line_length": 1},
]


# Query parameters that take any text: a query string carries text only, so a "number"
# schemathesis generates for one is, on the wire, valid text.
FREE_TEXT = {
    (method.upper(), path): {
        p["name"]
        for p in op.get("parameters", [])
        if p.get("in") == "query"
        and p["schema"] in ({"type": "string"}, {"type": "array", "items": {"type": "string"}})
    }
    for path, item in DOCUMENT["paths"].items()
    for method, op in item.items()
    if method in ("get", "put", "post", "delete", "patch")
}


def only_moot_violations(case, headers):
    """A negative case whose only invalid parts cannot reach the server as such: free-text
    query parameters, and generated headers the test replaced with its own (the token)."""
    negative = {
        location.value for location, info in case.meta.components.items() if info.mode.is_negative
    }
    moot = (
        {"query"} if set(case.query or {}) <= FREE_TEXT[(case.method.upper(), case.path)] else set()
    )
    if headers is not None:
        moot.add("header")
    return bool(negative) and negative <= moot


def known_differences(case, response, headers=None):
    """Checks this case is spared: where JSON Schema cannot say what the API does."""
    spared = set()
    if case.meta.generation.mode.is_negative and only_moot_violations(case, headers):
        spared.add(checks.negative_data_rejection)
    body = case.body if isinstance(case.body, dict) else {}
    # A display name's 40 characters are counted after unprintable characters and extra
    # spaces are dropped, so a longer raw name may be accepted.
    name = body.get("name")
    if case.meta.generation.mode.is_negative and isinstance(name, str):
        try:
            clean_display_name(name)
            spared.add(checks.negative_data_rejection)
        except InvalidInput:
            pass
    # An email is checked beyond JSON Schema's "email" format (no reserved or disposable
    # domains), in live rooms as in waitlists: a refused one is a 400 for a valid shape.
    email = body.get("email")
    if not case.meta.generation.mode.is_negative and isinstance(email, str) and email:
        try:
            normalise_email(email)
        except InvalidInput:
            spared.add(checks.positive_data_acceptance)
    # A webhook's URL: JSON Schema's "uri" with an http(s) scheme, but the API also wants
    # a host and a port that is a number up to 65535 (a 400 naming the url).
    url = body.get("url")
    if not case.meta.generation.mode.is_negative and case.path.startswith("/api/admin/webhooks"):
        try:
            check_url(url)
        except InvalidEndpoint:
            spared.add(checks.positive_data_acceptance)
    # A drop's moment as ISO 8601 text: JSON Schema's pattern cannot rule out a day that
    # does not exist, nor a time beyond the integer bounds, which the API refuses (400).
    for name in ("prequeue_at", "starts_at", "ends_at"):
        moment = body.get(name)
        if not case.meta.generation.mode.is_negative and isinstance(moment, str):
            try:
                BY_NAME[name].check(moment)
            except InvalidSetting:
                spared.add(checks.positive_data_acceptance)
    # A stock report's request id is printable text (str.isprintable: no separator but
    # the space, no unassigned or surrogate code point), which the document's pattern
    # says only of control characters: another is refused with a 400.
    request_id = body.get("request_id")
    if (
        not case.meta.generation.mode.is_negative
        and case.path.endswith("/stock")
        and isinstance(request_id, str)
    ):
        try:
            checked_request_id(request_id)
        except InvalidInput:
            spared.add(checks.positive_data_acceptance)
    # ... nor that a drop's times come in order with the room's others (400 if not).
    if response is not None and response.status_code == 400 and "after starts_at" in response.text:
        spared.add(checks.positive_data_acceptance)
    # An identity key must be a PEM Ed25519 public key, and a secret is trimmed before its
    # 32 characters are counted; bypass_paths are paths, none with a dot segment, none
    # letting everything through: JSON Schema says none of it (a 400 naming the setting).
    if (
        response is not None
        and response.status_code == 400
        and re.search(r"identity_(public_key|secret)|bypass_paths", response.text)
    ):
        spared.add(checks.positive_data_acceptance)
    # A plan's arrivals and pre-queue together are at most 100,000,000 people: a sum,
    # which JSON Schema cannot bound (each count alone is; a 400 says the total).
    if (
        response is not None
        and response.status_code == 400
        and "arrivals in one plan" in response.text
    ):
        spared.add(checks.positive_data_acceptance)
    # A page template must parse as Mustache and name only our variables, and its image
    # origins must be origins (docs/templates.md): JSON Schema says neither.
    if (
        response is not None
        and response.status_code == 400
        and re.search(r"page_(template|asset_origins)", response.text)
    ):
        spared.add(checks.positive_data_acceptance)
    # A release's sold is counted only with the room's site key as the bearer, which a
    # generated request does not hold (the rule is about the credential, not the body).
    if (
        response is not None
        and response.status_code == 403
        and "site_key_required" in (response.text)
    ):
        spared.add(checks.positive_data_acceptance)
    # Query parameters the document does not name are ignored, as is usual on the web;
    # schemathesis takes a query as closed and counts them as invalid input.
    extra = set(case.query or {}) - QUERY[(case.method.upper(), case.path)]
    if case.meta.generation.mode.is_negative and extra:
        spared.add(checks.negative_data_rejection)
    return spared


def existing(client, path):
    """Path parameters that name things that exist: the room with a live ticket, and with
    an ended one, and its live site key; the manual room with someone in line; a webhook
    endpoint."""
    names = re.findall(r"{(\w+)}", path)
    if not names:
        return []
    live, ended = (client.post(f"/api/rooms/{ROOM}/join").get_json()["token"] for _ in "ab")
    client.post(f"/api/rooms/{ROOM}/leave/{ended}")
    key = client.post(f"/api/admin/rooms/{ROOM}/site-key", headers=ADMIN).get_json()["id"]
    hook = {"url": "https://hooks.example/in"}  # a webhook endpoint (no delivery yet)
    hooks = {
        "endpoint_id": client.post("/api/admin/webhooks", json=hook, headers=ADMIN).get_json()[
            "id"
        ],
        "delivery_id": "msg_" + "0" * 26,
    }
    choices = [
        {"room": ROOM, "token": live, "key_id": key, **hooks},
        {"room": ROOM, "token": ended, "key_id": key, **hooks},
        {"room": MANUAL, "token": IN_LINE, "key_id": key, **hooks},
    ]
    return [dict(pairs) for pairs in {tuple((n, choice[n]) for n in names) for choice in choices}]


def line_up(client, admin, make_room, people=3):
    """The manual room afresh: two free seats, ``people`` waiting; their tokens."""
    client.delete(f"/api/admin/rooms/{MANUAL}", headers=admin)
    make_room(MANUAL, capacity=2, admission_mode="manual")
    return [client.post(f"/api/rooms/{MANUAL}/join").get_json()["token"] for _ in range(people)]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_reply_is_documented(app, client, admin, make_room, method, path):
    """Generated requests, valid and not, with and without the admin token, to rooms and
    tickets that exist and that do not: every reply is one the document allows."""
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app, config=CONFIG)
    operation = schema[path][method]
    make_room(ROOM, capacity=1)
    line_up(client, admin, make_room)
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    cases = st.one_of(
        *(operation.as_strategy(mode) for mode in modes),
        *(
            operation.as_strategy(mode, path_parameters=known)
            for known in existing(client, path)
            for mode in modes
        ),
    )

    # 30 examples an operation (each resets two rooms): with some 60 operations this is the
    # suite's longest test, and CI has 30 minutes for everything
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    # Hypothesis favours False: most requests carry the admin token (else admin calls
    # would nearly all be 401); the others keep the generated Authorization header, if any.
    @given(
        case=cases,
        generated_auth=st.booleans(),
        throttle=st.sampled_from([LENIENT, STRICT]),
        room=st.sampled_from(ROOM_STATES),
    )
    def fuzz(case, generated_auth, throttle, room):
        app.config["ADMIN_FAILURE_LIMIT"] = LENIENT
        make_room(ROOM, capacity=1, **room)
        in_line = line_up(client, admin, make_room)
        if (case.path_parameters or {}).get("token") == IN_LINE:
            case.path_parameters["token"] = in_line[-1]
        app.config["ADMIN_FAILURE_LIMIT"] = throttle
        headers = None if generated_auth else admin
        response = case.call(headers=headers)
        assert response.status_code < 500 or response.status_code == 503, response.text
        spared = known_differences(case, response, headers)
        wanted = [check for check in CHECKS if check not in spared]
        case.validate_response(response, checks=wanted, headers=headers)

    fuzz()


@pytest.fixture
def down_app(tmp_path, admin):
    """An app whose Redis is unreachable."""
    token = admin["Authorization"].removeprefix("Bearer ")
    return create_app(
        {"REDIS_URL": "redis://127.0.0.1:9/0", "ADMIN_TOKEN": token, "SECRET_KEY": "x",
         "SWEEP_INTERVAL": 0, "CHAT_UPKEEP_SECONDS": 0, "DATA_DIR": str(tmp_path)}
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_outage_replies_are_documented(down_app, admin, method, path):
    """With Redis unreachable, every reply is still one the document allows (a 503 with
    Retry-After where Redis is needed), never a 500."""
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", down_app, config=CONFIG)
    operation = schema[path][method]
    cases = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )
    # Invalid input may meet the outage before it is looked at: a 503 is no acceptance.
    wanted = [check for check in CHECKS if check is not checks.negative_data_rejection]

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=cases)
    def fuzz(case):
        response = case.call(headers=admin)
        assert response.status_code < 500 or response.status_code == 503, response.text
        case.validate_response(response, checks=wanted, headers=admin)

    fuzz()
