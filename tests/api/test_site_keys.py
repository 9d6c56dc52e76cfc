"""The site alone counts stock (issue 29): a visitor's own pass ends its own seat and
nothing more; ``sold`` needs the room's site key (or the admin token), made, listed and
revoked through the admin API; concurrent releases report the units once."""

from __future__ import annotations

import threading

import pytest

from tests.api.conftest import ADMIN
from tests.api.test_gate import SITE, join, site_app
from webapp.domain.passes import new_private_pem

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
KEY = new_private_pem()


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return site_app(redis_url, clock, tmp_path, KEY)


@pytest.fixture
def drop(make_room):
    """A site room with a stock of 100 and a line behind its one seat."""
    return make_room("shop", capacity=1, site_url=SITE, pass_renew_seconds=30, stock=100)


def site_key(client, room="shop", label="checkout"):
    reply = client.post(f"/api/admin/rooms/{room}/site-key", json={"label": label}, headers=ADMIN)
    assert reply.status_code == 201, reply.get_json()
    return reply.get_json()


def release(client, held_pass, sold=0, key=None, room="shop"):
    headers = {"Authorization": f"Bearer {key}", "X-Waiting-Room-Pass": held_pass}
    if key is None:
        headers = {"Authorization": f"Bearer {held_pass}"}
    return client.post(f"/api/rooms/{room}/release", json={"sold": sold}, headers=headers)


def stock(app, room="shop"):
    return app.extensions["services"].visits.drops.stock(room)


def test_a_visitors_own_pass_cannot_count_stock(client, drop, app):
    """The attack of issue 29: with the pass from an ordinary join, {"sold": 100} is a
    403 site_key_required; the stock, the seat and the people waiting are unchanged."""
    seated, waiting = join(client, key="a"), join(client, key="b")
    reply = release(client, seated["pass"], sold=100)
    assert reply.status_code == 403
    assert reply.get_json()["error"] == "site_key_required"
    assert stock(app)[:2] == (100, 0)
    services = app.extensions["services"]
    assert services.reports.ticket_state("shop", seated["token"]) == "admitted"
    assert services.reports.ticket_state("shop", waiting["token"]) == "waiting"
    assert client.post("/api/rooms/shop/join", headers={"Idempotency-Key": "c"}).status_code == 200


def test_a_visitors_own_pass_still_ends_its_own_seat(client, drop, app):
    """Without sold, the pass alone releases its seat (the next is offered it); sold 0."""
    seated, waiting = join(client, key="a"), join(client, key="b")
    reply = release(client, seated["pass"])
    assert reply.get_json() == {"released": True, "why": "released", "sold": 0}
    state = app.extensions["services"].reports.ticket_state("shop", waiting["token"])
    assert state == "offered"


def test_the_site_key_counts_the_sale_once(client, drop, app):
    """With the site key as the bearer and the pass beside it, the units are counted,
    once however often the release is sent; the audit names the key."""
    made = site_key(client)
    seated = join(client, key="a")
    reply = release(client, seated["pass"], sold=3, key=made["key"])
    assert reply.status_code == 200
    assert reply.get_json() == {"released": True, "why": "released", "sold": 3}
    again = release(client, seated["pass"], sold=3, key=made["key"])
    assert again.get_json()["sold"] == 0
    assert stock(app)[:2] == (97, 3)
    audit = app.extensions["services"].reports.audit("shop")
    assert any(e.kind == "stock" and e.who == f"site key {made['id']}" for e in audit)
    assert any(e.kind == "site_key" and e.detail.startswith(f"made {made['id']}") for e in audit)


def test_the_admin_token_counts_the_sale_too(client, drop, app):
    seated = join(client, key="a")
    reply = release(client, seated["pass"], sold=2, key="test-admin-token")
    assert reply.get_json()["sold"] == 2 and stock(app)[:2] == (98, 2)


def test_a_wrong_revoked_or_other_rooms_key_is_refused(client, drop, make_room, app):
    """401 site_key_invalid for a key of the right shape that is not live here (another
    room's, a revoked one, a made-up one); 403 for a bearer that is no key at all;
    nothing changes."""
    make_room("other", capacity=1, site_url=SITE)
    others = site_key(client, room="other")["key"]
    revoked = site_key(client)
    gone = client.delete(f"/api/admin/rooms/shop/site-keys/{revoked['id']}", headers=ADMIN)
    assert gone.status_code == 204
    made_up = "wrsk_0123abcd_" + "A" * 32
    seated = join(client, key="a")
    for key in (others, revoked["key"], made_up, made_up[:-1] + "B"):
        reply = release(client, seated["pass"], sold=5, key=key)
        assert reply.status_code == 401, key
        assert reply.get_json()["error"] == "site_key_invalid"
    assert release(client, seated["pass"], sold=5, key="not-a-key").status_code == 403
    assert stock(app)[:2] == (100, 0)
    state = app.extensions["services"].reports.ticket_state("shop", seated["token"])
    assert state == "admitted"


def test_site_keys_are_listed_without_the_key_and_revoked(client, drop, clock):
    first = site_key(client, label="old")
    clock.advance(1)
    second = site_key(client, label="new")
    listed = client.get("/api/admin/rooms/shop/site-keys", headers=ADMIN).get_json()
    assert [k["id"] for k in listed["site_keys"]] == [first["id"], second["id"]]
    assert [k["label"] for k in listed["site_keys"]] == ["old", "new"]
    assert first["key"] not in str(listed) and second["key"] not in str(listed)
    assert client.delete(f"/api/admin/rooms/shop/site-keys/{first['id']}", headers=ADMIN)
    again = client.delete(f"/api/admin/rooms/shop/site-keys/{first['id']}", headers=ADMIN)
    assert again.status_code == 404
    listed = client.get("/api/admin/rooms/shop/site-keys", headers=ADMIN).get_json()
    assert [k["id"] for k in listed["site_keys"]] == [second["id"]]


def test_site_keys_need_the_admin_and_a_room(client, drop):
    """Without the admin token: 401; no such room: 404; past ten live keys: 409."""
    assert client.post("/api/admin/rooms/shop/site-key").status_code == 401
    assert client.get("/api/admin/rooms/shop/site-keys").status_code == 401
    assert client.post("/api/admin/rooms/nope/site-key", headers=ADMIN).status_code == 404
    assert client.get("/api/admin/rooms/nope/site-keys", headers=ADMIN).status_code == 404
    bad = client.post("/api/admin/rooms/shop/site-key", json={"label": 5}, headers=ADMIN)
    assert bad.status_code == 400
    for _ in range(10):
        site_key(client)
    full = client.post("/api/admin/rooms/shop/site-key", headers=ADMIN)
    assert full.status_code == 409


def test_a_deleted_room_takes_its_site_keys(client, drop, r, make_room):
    made = site_key(client)
    assert client.delete("/api/admin/rooms/shop", headers=ADMIN).status_code in (200, 204)
    assert not [k for k in r.scan_iter("*site-keys*")]
    make_room("shop", capacity=1, site_url=SITE, stock=100)
    seated = join(client, key="a")
    assert release(client, seated["pass"], sold=1, key=made["key"]).status_code == 401


def test_concurrent_releases_report_the_units_once(redis_url, r, clock, tmp_path):
    """Eight releases of one pass at once, each with the site key: one reply says
    sold 3, the others 0, and the stock fell by 3."""
    app = site_app(redis_url, clock, tmp_path, KEY)
    client = app.test_client()
    client.put("/api/admin/rooms/shop", json={"capacity": 1, "site_url": SITE, "stock": 100},
               headers=ADMIN)  # fmt: skip
    made = site_key(client)
    seated = join(client, key="a")
    replies: list[int] = []
    start = threading.Barrier(8)

    def one() -> None:
        own = app.test_client()
        start.wait()
        replies.append(release(own, seated["pass"], sold=3, key=made["key"]).get_json()["sold"])

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(replies) == [0] * 7 + [3]
    assert stock(app)[:2] == (97, 3)
