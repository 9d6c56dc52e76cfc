"""Chat over the room websocket against gunicorn with 2 workers, at the protocol level:
order, refusals, the rate limit, reconnects and the per-visitor connection cap."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import websocket

pytestmark = pytest.mark.e2e


class Socket:
    """One open room socket of one visitor, collecting the frames it gets."""

    def __init__(
        self, server: Any, visitor: Any, room: str, after: int | None = None, joined: bool = True
    ) -> None:
        url = server.url.replace("http://", "ws://") + f"/rooms/{room}/ws"
        if after is not None:
            url += f"?after={after}"
        self.ws = websocket.create_connection(
            url, header=[f"Cookie: {visitor.cookie()}"], origin=server.url, timeout=10
        )
        self.frames: list[dict[str, Any]] = []
        if after is None and joined:  # in the chat: from here on it gets every message
            self.until(count("chat.history", 1))

    def send(self, text: str, **extra: Any) -> None:
        self.ws.send(json.dumps({"type": "send", "text": text, **extra}))

    def until(self, check: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Reads frames until `check(frames)` holds."""
        deadline = time.monotonic() + timeout
        while not check(self.frames):
            assert time.monotonic() < deadline, f"timed out; got {self.frames[-5:]}"
            self.ws.settimeout(max(deadline - time.monotonic(), 0.05))
            self.frames.append(json.loads(self.ws.recv()))
        return self.frames

    def close_frame(self, timeout: float = 5.0) -> tuple[int, str]:
        """Reads until the server closes; returns its close code and reason."""
        self.ws.settimeout(timeout)
        while True:
            opcode, data = self.ws.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                return int.from_bytes(data[:2], "big"), data[2:].decode()

    def texts(self) -> list[str]:
        return [f["text"] for f in self.frames if f["type"] == "message"]

    def ids(self) -> list[int]:
        return [f["id"] for f in self.frames if f["type"] == "message"]

    def close(self) -> None:
        # close() may fail on a socket the server already closed; shutdown() always frees it
        with contextlib.suppress(websocket.WebSocketException, OSError):
            self.ws.close(timeout=1)
        self.ws.shutdown()


@pytest.fixture
def sockets() -> Iterator[list[Socket]]:
    opened: list[Socket] = []
    yield opened
    for sock in opened:
        sock.close()


def seated(server: Any, room: str, name: str) -> Any:
    visitor = server.visitor(name)
    visitor.join(room)
    return visitor


def count(kind: str, n: int) -> Any:
    return lambda frames: sum(f["type"] == kind for f in frames) >= n


def test_everyone_gets_every_message_in_one_order(server, room, sockets):
    """Three visitors (on whichever worker) see all messages, in the same id order."""
    name = room(capacity=5)
    people = [seated(server, name, who) for who in ("Ann", "Bo", "Cy")]
    sockets += [Socket(server, p, name) for p in people]
    for i in range(5):
        for who, sock in zip("ABC", sockets, strict=True):
            sock.send(f"{who}{i}")
    for sock in sockets:
        sock.until(count("message", 15))
    assert sockets[0].ids() == list(range(1, 16))
    assert sockets[0].texts() == sockets[1].texts() == sockets[2].texts()
    mine = [f for f in sockets[0].frames if f["type"] == "message" and f["mine"]]
    assert {f["text"][0] for f in mine} == {"A"}


def test_bad_messages_are_refused_with_a_reason(server, room, sockets):
    """Empty and over-long messages come back as errors; nothing is sent to others."""
    name = room(capacity=5)
    ann, bo = seated(server, name, "Ann"), seated(server, name, "Bo")
    sockets += [Socket(server, ann, name), Socket(server, bo, name)]
    sockets[0].send("   ", ref=7)
    sockets[0].send("x" * 2001, ref="b")
    sockets[0].ws.send(json.dumps({"type": "send", "text": ["not", "text"]}))
    sockets[0].send("<b>fine</b>")
    errors = sockets[0].until(count("error", 3))
    reasons = [f["error"] for f in errors if f["type"] == "error"]
    assert any("empty" in r for r in reasons)
    assert any("2,000" in r for r in reasons)
    assert any("must be text" in r for r in reasons)
    assert [f.get("ref") for f in errors if f["type"] == "error"] == [7, "b", None]
    assert sockets[1].until(count("message", 1))[-1]["text"] == "<b>fine</b>"
    assert sockets[1].texts() == ["<b>fine</b>"]


def test_fast_sender_is_slowed_and_nothing_is_lost(server, room, sockets):
    """Past 20 messages in 10 seconds a sender is told to wait; others get all 20."""
    name = room(capacity=5)
    ann, bo = seated(server, name, "Ann"), seated(server, name, "Bo")
    sockets += [Socket(server, ann, name), Socket(server, bo, name)]
    for i in range(22):
        sockets[0].send(f"m{i}")
    frames = sockets[0].until(count("error", 2))
    limited = [f for f in frames if f["type"] == "error"]
    assert "too fast" in limited[0]["error"]
    assert limited[0]["retry_after"] >= 1
    assert sockets[1].until(count("message", 20)) and sockets[1].texts() == [
        f"m{i}" for i in range(20)
    ]


def test_reconnect_gets_only_what_it_missed(server, room, sockets):
    """A socket that comes back with its last id gets the rest, once, in order."""
    name = room(capacity=5)
    ann, bo = seated(server, name, "Ann"), seated(server, name, "Bo")
    first = Socket(server, ann, name)
    talker = Socket(server, bo, name)
    sockets += [first, talker]
    talker.send("one")
    last = first.until(count("message", 1))[-1]["id"]
    first.close()
    talker.send("two")
    talker.send("three")
    talker.until(count("message", 3))
    again = Socket(server, ann, name, after=last)
    sockets.append(again)
    again.until(count("message", 2))
    assert again.texts() == ["two", "three"]
    assert not any(f["type"] == "chat.history" for f in again.frames)


def test_connection_cap_across_workers(server, room, sockets):
    """A visitor's sixth open socket is refused with a clear close reason."""
    name = room(capacity=5)
    ann = seated(server, name, "Ann")
    for _ in range(5):
        sockets.append(Socket(server, ann, name))
        sockets[-1].until(count("room.state", 1))
    extra = Socket(server, ann, name, joined=False)
    sockets.append(extra)
    code, reason = extra.close_frame()
    assert code == 4008
    assert "too many open connections" in reason
    sockets.pop(0).close()  # one closes: a new one fits again
    sockets.append(once_counted_out(server, ann, name))
    sockets[-1].until(count("room.state", 1))


def once_counted_out(server: Any, visitor: Any, room: str, timeout: float = 10.0) -> Socket:
    """A socket of ``visitor``'s in ``room``, opened again while the refusal (4008) says a
    closed one is still counted: the server counts a socket out when its handler ends,
    a moment after the close, later on a busy machine."""
    deadline = time.monotonic() + timeout
    while True:
        sock = Socket(server, visitor, room, joined=False)
        opcode, data = sock.ws.recv_data(control_frame=True)
        while opcode not in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_CLOSE):
            opcode, data = sock.ws.recv_data(control_frame=True)  # a ping, say
        if opcode == websocket.ABNF.OPCODE_TEXT:
            sock.frames.append(json.loads(data))
            return sock
        sock.close()
        code, reason = int.from_bytes(data[:2], "big"), data[2:].decode()
        assert code == 4008, (code, reason)
        assert time.monotonic() < deadline, f"still refused after {timeout} s: {reason}"
        time.sleep(0.1)


def test_hostile_frames_get_error_frames_and_the_socket_lives(server, room, sockets):
    """Deep nesting, lone surrogates (as JSON.stringify writes broken text) and numbers
    past a double: an error frame for each, and the same socket still chats."""
    name = room(capacity=5)
    sock = Socket(server, seated(server, name, "Ann"), name)
    sockets.append(sock)
    for raw in [
        "[" * 1000 + "]" * 1000,
        '{"type": "send", "text": ' + "[" * 500 + "]" * 500 + "}",
        '{"type": "send", "text": "broken \\ud800 text", "ref": 1}',
        '{"type": "send", "text": 1e400}',
    ]:
        sock.ws.send(raw)
    errors = [f["error"] for f in sock.until(count("error", 4)) if f["type"] == "error"]
    assert sum("nested more than" in e for e in errors) == 2
    assert sum("not valid JSON" in e for e in errors) == 2
    sock.ws.send('{"type": "ping", "at": 123456789012345678901234567890}')
    assert sock.until(count("pong", 1))[-1]["at"] == pytest.approx(1.2345678901e29)
    sock.send("still here")
    assert sock.until(count("message", 1))[-1]["text"] == "still here"


def test_a_rename_in_another_tab_signs_the_next_messages(server, room, sockets):
    """Ann's socket is open; she changes her name in another tab (a form post, perhaps
    on the other worker): her next message carries the new name, without a reconnect."""
    name = room(capacity=5)
    ann, bo = seated(server, name, "Ann"), seated(server, name, "Bo")
    sockets += [Socket(server, ann, name), Socket(server, bo, name)]
    mine, theirs = sockets
    mine.send("before")
    theirs.until(count("message", 1))
    ann.post("/name", name="Annie", next=f"/rooms/{name}")
    told = mine.until(count("member.renamed", 1))
    assert [f["name"] for f in told if f["type"] == "member.renamed"] == ["Annie"]
    mine.send("after")
    got = theirs.until(count("message", 2))
    assert [(f["text"], f["name"]) for f in got if f["type"] == "message"] == [
        ("before", "Ann"),
        ("after", "Annie"),
    ]
