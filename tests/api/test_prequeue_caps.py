"""A lottery ticket is not for sale (issue 29): a drop's pre-queue takes at most
``prequeue_per_address`` entries from one address and ``prequeue_per_network`` from one
network over its whole length, whatever the joins a minute; beyond, 429 until the
start, counted nowhere; a customer the site vouches for counts against their own one
place, not their address; after the start, joins go to the line as usual."""

from __future__ import annotations

from typing import Any

import jwt

from tests.api.conftest import ADMIN

T0 = 1_700_000_000  # the test clock's start
SECRET = "the shop's identity secret, 32+ characters long"


def drop(client: Any, **more: Any) -> None:
    body = {"capacity": 1, "prequeue_at": T0 - 10, "starts_at": T0 + 600,
            "prequeue_per_address": 2, "prequeue_per_network": 3, **more}  # fmt: skip
    assert client.put("/api/admin/rooms/drop", json=body, headers=ADMIN).status_code == 201


def join(client: Any, address: str, **body: Any) -> Any:
    return client.post("/api/rooms/drop/join", json=body, environ_base={"REMOTE_ADDR": address})


def entries(app: Any) -> int:
    return int(app.extensions["services"].client.zcard("wr:{room:drop}:drop:prequeue"))


def test_an_address_and_a_network_get_their_most_entries(client: Any, app: Any, clock: Any):
    drop(client)
    assert [join(client, "192.0.2.1").status_code for _ in range(2)] == [200, 200]
    clock.advance(300)  # minutes later: the cap is over the pre-queue's whole length
    third = join(client, "192.0.2.1")
    assert third.status_code == 429
    assert "pre-queue" in third.get_json()["error"]
    assert int(third.headers["Retry-After"]) == 300  # until the start
    assert join(client, "192.0.2.2").status_code == 200  # the network's third
    assert join(client, "192.0.2.3").status_code == 429  # the network has its three
    assert join(client, "198.51.100.1").status_code == 200  # another network
    assert entries(app) == 4  # the refused ones changed nothing


def test_a_vouched_for_customer_counts_as_one_place(client: Any, clock: Any):
    drop(client, identity="optional", identity_secret=SECRET)
    for i in range(4):  # four customers of the site, behind one address
        claims = {"sub": f"c{i}", "aud": "drop", "exp": T0 + 300, "jti": f"j{i}"}
        identity = jwt.encode(claims, SECRET, algorithm="HS256")
        assert join(client, "192.0.2.9", identity=identity).status_code == 200
    assert join(client, "192.0.2.9").status_code == 200  # the address's own two
    assert join(client, "192.0.2.9").status_code == 200
    assert join(client, "192.0.2.9").status_code == 429


def test_after_the_start_joins_go_to_the_line(client: Any, clock: Any):
    drop(client)
    for _ in range(2):
        join(client, "192.0.2.1")
    assert client.post("/api/admin/rooms/drop/start", headers=ADMIN).status_code == 200
    assert join(client, "192.0.2.1").status_code == 200
