"""What an outsider holds opens nothing more than it should: a visitor's ticket or pass
is no key to any admin endpoint; a forged X-Forwarded-For behind a trusted proxy counts
as the address the proxy saw; a gate join refused for want of a seat leaves Redis as it
was. Each attack is checked by what it changed, every key of Redis compared before and
after."""

from __future__ import annotations

from typing import Any

import pytest
from building import solved
from werkzeug.routing import Rule

from tests.api.conftest import ADMIN, api_app
from webapp.domain.passes import new_private_pem

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
SITE = "https://shop.example/"
KEY = new_private_pem()


def redis_state(r: Any, app: Any) -> dict[str, Any]:
    """Every key and its value once the predictions written behind are in, but the
    request throttles' counters (which count a wrong credential by design) and the lease
    clock's ``seen`` (when a room's script last ran: a heartbeat, not the room's state)."""
    services = app.extensions["services"]
    assert services.rooms.written()
    throttles = services.keys.limits
    state: dict[str, Any] = {}
    for key in sorted(r.scan_iter()):
        if key.startswith(throttles):
            continue
        if key.endswith("}:clock"):
            state[key] = {k: v for k, v in r.hgetall(key).items() if k != "seen"}
        else:
            state[key] = (r.type(key), r.dump(key), r.ttl(key) > 0)
    return state


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return api_app(redis_url, clock, tmp_path, PASS_KEY=KEY)


def admin_urls(app: Any) -> list[tuple[str, str]]:
    """Every admin API route and method, its variables filled in with a room that exists
    and ids that may not."""
    filled = {"name": "shop", "room": "shop", "hook": "1", "hook_id": "1", "code": "x"}
    found = []
    rule: Rule
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/admin"):
            continue
        path = rule.rule
        for argument in rule.arguments:
            path = path.replace(f"<{argument}>", filled.get(argument, "1"))
            for converter in ("int", "string", "path"):
                path = path.replace(f"<{converter}:{argument}>", filled.get(argument, "1"))
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            found.append((method, path))
    return found


def test_a_visitors_ticket_or_pass_opens_no_admin_endpoint(app, r):
    """Joined to a site's room, a visitor holds a ticket and a signed pass. Presented as
    the bearer token (or a pass header) to every admin endpoint, each is 401 and nothing
    in Redis changes: no webhook made, no plan stored, no room changed or deleted."""
    client = app.test_client()
    reply = client.put("/api/admin/rooms/shop", json={"capacity": 2, "site_url": SITE},
                       headers=ADMIN)  # fmt: skip
    assert reply.status_code in (200, 201)
    joined = client.post("/api/rooms/shop/join", json={}).get_json()
    credentials = [joined["token"], joined["pass"]]
    urls = admin_urls(app)
    assert ("POST", "/api/admin/webhooks") in urls and len(urls) > 20
    assert any("plan" in path for _, path in urls)
    before = redis_state(r, app)
    body = {"url": "https://evil.example/hook", "capacity": 100, "arrivals": [1]}
    for credential in credentials:
        for headers in ({"Authorization": f"Bearer {credential}"},
                        {"X-Waiting-Room-Pass": credential}):  # fmt: skip
            for method, path in urls:
                answer = client.open(path, method=method, json=body, headers=headers)
                assert answer.status_code == 401, (method, path, answer.get_data()[:200])
                assert answer.is_json
    assert redis_state(r, app) == before


def test_a_forged_forwarded_for_behind_the_proxy_counts_as_the_proxys_client(
    redis_url, r, clock, tmp_path
):
    """Behind one trusted proxy that appends the address it saw (nginx's
    $proxy_add_x_forwarded_for), a client who sends a new X-Forwarded-For of its own on
    every join is still counted as the address the proxy appended: 3 joins, then 429,
    and the refused ones are counted nowhere."""
    app = api_app(redis_url, clock, tmp_path, PROXY_COUNT=1, JOIN_LIMIT="3 per minute")
    client = app.test_client()
    assert client.put("/api/admin/rooms/hall", json={"capacity": 1}, headers=ADMIN).status_code
    codes = []
    for i in range(1, 7):
        reply = client.post("/api/rooms/hall/join", json={},
                            headers={"X-Forwarded-For": f"203.0.113.{i}, 192.0.2.50"},
                            environ_base={"REMOTE_ADDR": "127.0.0.1"})  # fmt: skip
        codes.append(reply.status_code)
    assert codes == [200] * 3 + [429] * 3
    waiting = client.get("/api/rooms/hall/qsize").get_json()
    assert waiting == {"len": 2, "active": 1, "capacity": 1}
    other = client.post("/api/rooms/hall/join", json={},
                        headers={"X-Forwarded-For": "192.0.2.50, 192.0.2.51"},
                        environ_base={"REMOTE_ADDR": "127.0.0.1"})  # fmt: skip
    assert other.status_code == 200  # the proxy's next client: its own count


def test_a_gate_join_refused_for_want_of_a_seat_changes_nothing(redis_url, r, clock, tmp_path):
    """The gate's join takes a seat at once or nothing: in a full room with people
    waiting, a visitor without a pass gets 401 and every key of Redis is as it was (no
    ticket, no counter, no audit line, no event, no statistic)."""
    app = api_app(redis_url, clock, tmp_path, PASS_KEY=KEY, PUBLIC_URL="https://shop.example/q")
    client = app.test_client()
    client.put("/api/admin/rooms/shop", json={"capacity": 1, "site_url": SITE}, headers=ADMIN)
    client.post("/api/rooms/shop/join", json={})
    client.post("/api/rooms/shop/join", json={})  # one seated, one waiting
    clock.advance(5)
    before = redis_state(r, app)
    gated = app.test_client().get("/gate/shop", headers={"X-Original-URI": "/shop/item"})
    assert gated.status_code == 401 and "Set-Cookie" not in gated.headers
    assert redis_state(r, app) == before


def state_but_refusals(r: Any, app: Any) -> dict[str, Any]:
    """``redis_state`` with the room's tallies of refused joins left out of its stats
    and history (a refusal is counted there by design: the panel and /metrics)."""
    state = redis_state(r, app)
    for key in state:
        if key.endswith(("}:stats", "}:history")):
            fields = r.hgetall(key)
            state[key] = {k: v for k, v in fields.items() if "refused" not in k}
    return state


def test_a_busy_auto_rooms_refused_joins_change_nothing(redis_url, r, clock, tmp_path):
    """Under the puzzle's auto, past its threshold, the join's own script refuses a new
    place without a solution: no solution, an empty one, a made-up one, another room's
    solved one, each from a forged address of its own behind a trusted proxy, all 403
    with a challenge; not a key of Redis changes (no ticket, no join counted in the
    history the threshold reads, no per-address or per-network count); a client that
    holds a place re-joins it without a puzzle, and a solved one still joins."""
    app = api_app(redis_url, clock, tmp_path, PROXY_COUNT=1, JOIN_LIMIT="5 per minute")
    client = app.test_client()
    for name in ("hall", "annex"):
        settings = {"capacity": 1, "challenge": "auto", "challenge_threshold": 2,
                    "challenge_cost": 100}  # fmt: skip
        assert client.put(f"/api/admin/rooms/{name}", json=settings, headers=ADMIN).status_code

    def join(body: dict[str, Any], i: int) -> Any:
        return client.post("/api/rooms/hall/join", json=body,
                           headers={"X-Forwarded-For": f"203.0.113.{i}, 192.0.2.{i}"},
                           environ_base={"REMOTE_ADDR": "127.0.0.1"})  # fmt: skip

    assert [join({}, i).status_code for i in range(2)] == [200] * 2
    key = {"Idempotency-Key": "held-before-the-rush"}
    held = client.post("/api/rooms/hall/join", json={}, headers=key).get_json()["token"]
    other = solved(client.get("/api/rooms/annex/challenge").get_json())
    before = state_but_refusals(r, app)
    for i, body in enumerate(({}, {"altcha": ""}, {"altcha": "bm90IGEgc29sdXRpb24="},
                              {"altcha": other}, {}, {}), start=10):  # fmt: skip
        reply = join(body, i)
        assert reply.status_code == 403, body
        assert reply.get_json()["error"] == "challenge_required"
    assert state_but_refusals(r, app) == before
    assert client.get("/api/rooms/hall/qsize").get_json()["len"] == 2
    again = client.post("/api/rooms/hall/join", json={}, headers=key)  # its own place
    assert again.status_code == 200 and again.get_json()["token"] == held
    challenge = client.get("/api/rooms/hall/challenge").get_json()
    assert join({"altcha": solved(challenge)}, 30).status_code == 200
