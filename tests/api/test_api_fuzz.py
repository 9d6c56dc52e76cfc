"""Hostile input, generated: no request to the API may cause a 500 or a non-JSON answer."""

from __future__ import annotations

import json

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

SEGMENT = st.one_of(
    st.sampled_from(["lobby", "nowhere", "LOBBY", "a" * 65, "%00", "..", "é", "-"]),
    st.text(min_size=1, max_size=20).map(lambda t: t.replace("/", "").replace("?", "") or "x"),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
BODY = st.one_of(
    st.none(),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({}, optional={"name": JSONISH, "capacity": JSONISH,
                                        "status": JSONISH}).map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=64),
)  # fmt: skip
PATHS = st.one_of(
    st.tuples(st.just("/api/rooms/"), SEGMENT, st.sampled_from(["/join", "/qsize", ""])),
    st.tuples(st.just("/api/rooms/lobby/position/"), SEGMENT, st.just("")),
    st.tuples(st.just("/api/rooms/lobby/leave/"), SEGMENT, st.just("")),
    st.tuples(st.just("/api/admin/rooms/"), SEGMENT, st.just("")),
    st.tuples(st.just("/api/"), SEGMENT, st.just("")),
).map("".join)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
    path=PATHS,
    body=BODY,
    use_admin=st.booleans(),
    key=st.one_of(st.none(), st.text(max_size=200)),
)
def test_no_request_causes_a_500(client, make_room, admin, method, path, body, use_admin, key):
    """Any method, path, body and headers: a 2xx or 4xx JSON answer, never a 500."""
    make_room("lobby", capacity=1)
    headers = dict(admin) if use_admin else {}
    if key is not None and key.isascii() and "\n" not in key and "\r" not in key:
        headers["Idempotency-Key"] = key
    response = client.open(path, method=method, data=body, headers=headers,
                           content_type="application/json")  # fmt: skip
    assert response.status_code < 500, (method, path, body, response.get_data()[:200])
    assert response.is_json, (method, path, response.get_data()[:200])
