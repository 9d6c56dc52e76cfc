"""A pass opens the gate for one holder (issue 29): every renewal rotates the pass and
the seat remembers the one it handed out last, so copies of a pass work for one holder
past the next renewal; an ended seat's passes are refused at once, fresh or not, from
this process's memory (no Redis call), and a process started later reads them."""

from __future__ import annotations

import threading

import pytest

from tests.api.conftest import ADMIN
from tests.api.test_gate import SITE, gate, join, site_app
from webapp.domain.passes import new_private_pem
from webapp.domain.seat_passes import Revocations

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
KEY = new_private_pem()


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return site_app(redis_url, clock, tmp_path, KEY)


@pytest.fixture
def shop(make_room):
    return make_room("shop", capacity=2, site_url=SITE, pass_renew_seconds=30)


def renewed(reply):
    """The fresh pass a 204 renewal set, or None."""
    cookie = reply.headers.get("Set-Cookie", "")
    return cookie.split(";")[0].split("=", 1)[1] if cookie.startswith("wr_pass_shop=") else None


def test_five_copies_of_a_pass_renew_once(app, shop, clock):
    """Five clients present one pass at renewal, at once: one gets 204 and a fresh pass,
    four get 401; the seat is unchanged for them (nothing ended), and the old pass never
    renews again while the fresh one does."""
    body = join(app.test_client())
    clock.advance(31)  # past half its life: the next check renews
    replies: list = []
    start = threading.Barrier(5)

    def one() -> None:
        client = app.test_client()
        start.wait()
        replies.append(gate(client, "shop", body["pass"]))

    threads = [threading.Thread(target=one) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    statuses = sorted(reply.status_code for reply in replies)
    assert statuses == [204, 401, 401, 401, 401]
    fresh = next(renewed(reply) for reply in replies if reply.status_code == 204)
    services = app.extensions["services"]
    assert services.reports.ticket_state("shop", body["token"]) == "admitted"
    client = app.test_client()
    assert gate(client, "shop", body["pass"]).status_code == 401  # the old one, again
    assert gate(client, "shop", fresh).status_code == 204  # fresh: no renewal due yet
    clock.advance(31)
    again = gate(client, "shop", fresh)
    assert again.status_code == 204 and renewed(again) not in (None, fresh)
    assert gate(app.test_client(), "shop", fresh).status_code == 401  # rotated away


def test_the_holder_of_the_ticket_is_handed_the_one_pass(app, shop, clock):
    """A check-in with the ticket hands out a new pass, which becomes the seat's one:
    an earlier pass no longer renews, the new one does."""
    client = app.test_client()
    body = join(client)
    checked = client.get(f"/api/rooms/shop/position/{body['token']}").get_json()
    assert checked["pass"] != body["pass"]
    clock.advance(31)
    assert gate(client, "shop", body["pass"]).status_code == 401
    assert gate(client, "shop", checked["pass"]).status_code == 204


def test_an_ended_seats_fresh_pass_is_refused_at_once(app, shop, r, monkeypatch):
    """Released, left or removed: the seat's pass, still fresh, gets 401 from the gate
    at once, answered from memory (no Redis call), before Flask and in the route."""
    client = app.test_client()
    released, left, removed = join(client, key="a"), join(client, key="b"), None
    assert gate(client, "shop", released["pass"]).status_code == 204
    client.post("/api/rooms/shop/release", headers={"Authorization": f"Bearer {released['pass']}"})
    client.post(f"/api/rooms/shop/leave/{left['token']}")
    removed = join(client, key="c")
    client.post(f"/api/admin/rooms/shop/remove/{removed['token']}", headers=ADMIN)
    services = app.extensions["services"]

    def no_redis(*args, **kwargs):
        raise AssertionError("the gate asked Redis")

    monkeypatch.setattr(services.client, "execute_command", no_redis)
    for body in (released, left, removed):
        assert gate(client, "shop", body["pass"]).status_code == 401
        client.set_cookie("wr_pass_shop", body["pass"])
        assert client.get("/gate/shop").status_code == 401


def test_a_deleted_rooms_passes_are_refused(app, shop):
    client = app.test_client()
    body = join(client)
    assert client.delete("/api/admin/rooms/shop", headers=ADMIN).status_code in (200, 204)
    assert gate(client, "shop", body["pass"]).status_code == 401


def test_a_process_started_later_reads_the_revocations(app, shop, clock):
    """A revocation made before a process starts is in force in it (read from Redis
    once its hub listens), until the last pass of the seat would have expired."""
    client = app.test_client()
    body = join(client)
    client.post(f"/api/rooms/shop/leave/{body['token']}")
    services = app.extensions["services"]
    held = services.passes.verify("shop", body["pass"], clock())
    later = Revocations(services.client, services.keys, services.hub, clock)
    assert not later.revoked("shop", held, clock())
    later._read()  # what its hub's listener does once subscribed
    assert later.revoked("shop", held, clock())
    other = join(client, key="other")
    assert not later.revoked(
        "shop", services.passes.verify("shop", other["pass"], clock()), clock()
    )
    clock.advance(2 * 30 + 6)
    assert not later.revoked("shop", held, clock())


def test_a_room_made_again_under_its_name_lets_its_new_visitors_through(app, shop, clock):
    """Deleting a room refuses its passes; one made again under the same name a moment
    later hands out passes that pass (the revocation holds passes issued before it)."""
    client = app.test_client()
    old = join(client)
    assert client.delete("/api/admin/rooms/shop", headers=ADMIN).status_code in (200, 204)
    clock.advance(1)
    client.put("/api/admin/rooms/shop", json={"capacity": 2, "site_url": SITE}, headers=ADMIN)
    new = join(client, key="new")
    assert gate(client, "shop", old["pass"]).status_code == 401
    assert gate(app.test_client(), "shop", new["pass"]).status_code == 204
