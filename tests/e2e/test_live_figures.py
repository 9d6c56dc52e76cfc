"""A room's open pages hear of every change of its figures within a second, whichever of
gunicorn's 2 workers made it: joins to the line, a capacity raise that lets people in
from the line, a removal (whose own page ends, its chat closed at once) and a deletion.
The periodic refresh is a minute here, so only the announcement can be what shows."""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect
from test_chat_page import enter, in_room
from test_chat_socket import Socket, seated

from webapp.redis.keys import Keys

pytestmark = pytest.mark.e2e
AT_ONCE = 1000  # ms: the figures' promise to an open page
PREFIX = f"e2e{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[Server]:
    """The app with a refresh too slow to stand in for an announcement."""
    with e2e_server(
        redis_url,
        "e2e-live-figures.log",
        prefix=PREFIX,
        WEBAPP_SWEEP_INTERVAL="1",
        WEBAPP_WS_BEAT_SECONDS="5",
        WEBAPP_WS_REFRESH_SECONDS="60",
    ) as started:
        yield started


def admin(server: Server, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.url}/api/admin/rooms/{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {server.admin_token}",
                 "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=5) as reply:
        return json.load(reply)


def join_by_api(server: Server, room: str) -> str:
    """Someone joins through the JSON API (a worker of its own choosing); the token."""
    request = urllib.request.Request(f"{server.url}/api/rooms/{room}/join", data=b"")
    with urllib.request.urlopen(request, timeout=5) as reply:
        return str(json.load(reply)["token"])


def figures(page: Any, active: str, waiting: str) -> None:
    expect(page.locator("#active")).to_have_text(active, timeout=AT_ONCE)
    expect(page.locator("#waiting")).to_have_text(waiting, timeout=AT_ONCE)


def test_the_waiting_figure_follows_joins_to_the_line(server: Server, room: Any, person: Any):
    """Each join to the line shows on the open room page within a second."""
    name = room(capacity=1, dropout_seconds=600)
    ann = person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    figures(ann, "1", "0")
    for waiting in range(1, 4):
        join_by_api(server, name)
        figures(ann, "1", str(waiting))


def test_a_capacity_raise_lets_the_line_in_and_the_room_sees_it(
    server: Server, room: Any, person: Any
):
    """An admin raises the capacity: the people it lets in from the line show on the
    open room page within a second."""
    name = room(capacity=1, dropout_seconds=600)
    ann = person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    for _ in range(2):
        join_by_api(server, name)
    ann.reload()  # the figures as they are now, whether or not the joins were told
    in_room(ann, name)
    expect(ann.locator("#waiting")).to_have_text("2")
    admin(server, "PUT", name, {"capacity": 3})
    figures(ann, "3", "0")


def test_a_removal_closes_that_visitors_chat_at_once(server: Server, room: Any, person: Any):
    """An admin removes Bob: within a second his page says so with its chat closed, and
    Ann's page no longer counts him."""
    name = room(capacity=2, grace_seconds=60)
    ann, bob = person(), person(width=390, height=844)
    for page, who in ((ann, "Ann"), (bob, "Bob")):
        enter(page, server, name, who)
        in_room(page, name)
    figures(ann, "2", "0")
    code = bob.locator(".support .code").inner_text()
    admin(server, "POST", f"{name}/remove/{code}", {})
    expect(bob.locator("#chat-text:enabled")).to_have_count(0, timeout=AT_ONCE)
    expect(bob.locator("[data-why=removed], .flash-error").first).to_be_visible(timeout=AT_ONCE)
    figures(ann, "1", "0")


def test_a_deleted_room_tells_its_pages_and_closes_their_sockets(
    server: Server, room: Any, person: Any
):
    """An admin deletes the room: its open page says the room is gone within a second,
    and its chat is closed."""
    name = room(capacity=2)
    ann = person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    admin(server, "DELETE", name)
    expect(ann.locator("#chat-text:enabled")).to_have_count(0, timeout=AT_ONCE)
    expect(ann.locator("[data-why=deleted], .flash-error").first).to_be_visible(timeout=AT_ONCE)


def test_a_seated_visitors_admission_is_announced_once(server: Server, room: Any, redis_url: str):
    """Ann joins a room with a free seat, then opens its socket: the room hears of her
    admission once (the join), not again when her socket opens."""
    name = room(capacity=2)
    listener = redis.Redis.from_url(redis_url).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(Keys(PREFIX).hub_channel(f"room:{name}"))  # Keys.room_topic
    try:
        ann = seated(server, name, "Ann")
        sock = Socket(server, ann, name)
        sock.until(lambda frames: any(f["type"] == "room.state" for f in frames))
        heard, deadline = [], time.monotonic() + 1.5  # past every throttle's gap
        while time.monotonic() < deadline:
            message = listener.get_message(timeout=0.1)
            if message is not None:
                heard.append(json.loads(message["data"])["type"])
        sock.close()
    finally:
        listener.close()
    assert heard.count("room.changed") == 1
