"""People with an open page, and watchers of the room, for the fault tests.

``OpenPage`` is one person's browser tab without a browser, driven as
static/js/waiting.js and room.js drive the real one: the waiting page checks in by polling
``/rooms/<room>/line`` (``HX-Request: true``, 503s ignored) and follows ``HX-Redirect``
into the room; the room page holds the room socket, shows each chat message once (by
id), and when the socket closes reconnects with backoff and ``?after=<last shown id>``,
reloading the page after six failed connects (a close with 1013, "briefly unavailable",
is no failure: it tries again in 2 to 4 s). A failed check-in is asked again with the
page's backoff; a page load that lands on the outage page reloads as its refresh says.
A ``gone`` frame or an ended line is the end of that page, as in the browser. Each page
runs in a thread of its own and keeps a record of what it saw, for the test to judge.

``RoomWatch`` samples the room's seats and line straight from Redis; ``Prober`` sends
GET requests on a schedule and times every answer.
"""

from __future__ import annotations

import contextlib
import html
import json
import random
import re
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter
from typing import Any, NamedTuple

import redis
import websocket
from flask import Flask
from gunicorn_app import HttpVisitor, Server
from redis.backoff import NoBackoff
from redis.retry import Retry

from webapp.redis.keys import RoomKeys

POLL_SECONDS = 1.5  # a waiting page checks in this often (the real one: poll_after)
HTTP_TIMEOUT = 15.0  # a browser waits long for an answer; bounded so threads end
MAX_FAILURES = 6  # failed connects in a row before the page reloads (room.js)
TURN = re.compile(r'data-state="turn"\s+data-go="([^"]+)"')
POSITION = re.compile(r'data-position="(\d+)"')
POLL = re.compile(r'data-poll="([\d.]+)"')
REFRESH = re.compile(r'<meta http-equiv="refresh" content="(\d+)">')
CLOSE_TRY_AGAIN = 1013
PAGE_KIND = re.compile(r'data-page="(\w+)"')
ABNORMAL = 1006  # what a browser reports for a socket that ended without a close frame


class Answer(NamedTuple):
    """One HTTP request: what was asked, when, how long the answer took, its status
    (0: no answer at all)."""

    path: str
    sent: float  # time.monotonic()
    elapsed: float
    status: int


def timed_get(
    opener: Any, url: str, path: str, headers: dict[str, str] | None = None
) -> tuple[Answer, str, Any]:
    """GETs ``url + path``; returns the timed answer, its body and its headers."""
    request = urllib.request.Request(url + path, headers=headers or {})
    sent = time.monotonic()
    body, replied = "", None
    try:
        with opener.open(request, timeout=HTTP_TIMEOUT) as reply:
            status, body, replied = reply.status, reply.read().decode(), reply.headers
    except urllib.error.HTTPError as error:
        status = error.code
        with contextlib.closing(error):
            body = error.read().decode(errors="replace")
    except (urllib.error.URLError, OSError):
        status = 0
    return Answer(path, sent, time.monotonic() - sent, status), body, replied


def session_of(visitor: HttpVisitor, secret_key: str) -> dict[str, Any]:
    """The visitor's signed Flask session, read from their cookie."""
    app = Flask("faults")
    app.secret_key = secret_key
    serializer = app.session_interface.get_signing_serializer(app)  # type: ignore[attr-defined]
    cookie = next(c.value for c in visitor.jar if c.name == "session")
    data: dict[str, Any] = serializer.loads(cookie)
    return data


class OpenPage:
    """One person's open tab in one room (see the module docstring)."""

    def __init__(self, server: Server, room: str, name: str, secret_key: str) -> None:
        self.server = server
        self.room = room
        self.name = name
        self.secret_key = secret_key
        self.visitor = server.visitor(name)
        self.mode = "new"  # waiting | room | outage | gone | ended | dead | closed
        self.position: int | None = None
        self.poll = 10.0  # the line's data-poll (waiting.js's default when it has none)
        self.misses = 0  # check-ins lost in a row
        self.url = f"/rooms/{room}"  # the page's address, for a reload
        self.polls: list[Answer] = []
        self.events: list[tuple[float, str]] = []
        self.shown: list[dict[str, Any]] = []  # chat messages shown, in order
        self.last_id = 0
        self.me: str | None = None
        self.state: dict[str, Any] | None = None  # the last room.state frame
        self.connected = False
        self.opens = 0
        self.closes: list[tuple[float, int, str]] = []  # socket ends: (time, code, reason)
        self.protocol_errors: list[tuple[float, str]] = []  # bytes that were no frame
        self.restarts = 0  # chat.history on a reconnect: "The chat started over"
        self.missed = 0
        self.harness_error: str | None = None
        self._ws: websocket.WebSocket | None = None
        self._send_lock = threading.Lock()
        self._ref = 0
        self._stop = threading.Event()
        self._tab_closed = threading.Event()
        self.refresh = 0.0  # seconds before the outage page reloads itself
        self._join()
        self._load(f"/rooms/{room}")
        self.first_token = self.token
        self._thread = threading.Thread(target=self._run, name=f"page-{name}", daemon=True)
        self._thread.start()

    # -- what the test asks ---------------------------------------------------------

    @property
    def token(self) -> str | None:
        tickets: dict[str, str] = session_of(self.visitor, self.secret_key).get("tickets", {})
        return tickets.get(self.room)

    def texts(self) -> list[str]:
        return [m["text"] for m in self.shown]

    def acknowledged(self) -> list[str]:
        """This page's own messages that came back to it: the server stored them."""
        return [m["text"] for m in self.shown if m.get("mine")]

    def shown_twice(self) -> list[str]:
        return [text for text, n in Counter(self.texts()).items() if n > 1]

    def live(self) -> bool:
        """In the room, with an open socket that had its room.state and chat.history."""
        return self.mode == "room" and self.connected and self.me is not None

    def say(self, text: str) -> bool:
        """Sends a chat message, as the page does: only while the socket is open."""
        ws = self._ws
        if ws is None or not self.connected:
            return False
        with self._send_lock:
            self._ref += 1
            try:
                ws.send(json.dumps({"type": "send", "text": text, "ref": self._ref}))
            except (websocket.WebSocketException, OSError):
                return False
        return True

    def close_tab(self, timeout: float = 5.0) -> None:
        """The person closes the tab: the socket closes (1001) and nothing reconnects."""
        self._tab_closed.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.name}'s page did not close"

    def stop(self) -> None:
        """Test teardown: tells the page to stop (``close`` waits for it)."""
        self._stop.set()

    def close(self, timeout: float = HTTP_TIMEOUT + 5) -> None:
        """Test teardown: stops the page and frees its socket."""
        self._stop.set()
        self._thread.join(timeout)
        ws = self._ws
        if ws is not None:
            ws.shutdown()
        assert not self._thread.is_alive(), f"{self.name}'s page thread did not end"

    def summary(self, t0: float) -> str:
        """What this page went through, times relative to ``t0``."""
        seen = "; ".join(f"{at - t0:+.1f}s {what}" for at, what in self.events[-8:])
        return f"{self.name} [{self.mode}]: {seen or 'nothing happened'}"

    # -- the page's own life, in its thread ----------------------------------------

    def _note(self, what: str) -> None:
        self.events.append((time.monotonic(), what))

    def _get(self, path: str, headers: dict[str, str] | None = None) -> tuple[Answer, str, Any]:
        return timed_get(self.visitor.opener, self.server.url, path, headers)

    def _join(self) -> None:
        """The room page's button (a POST): the visit that follows shows the place."""
        try:
            self.visitor.join(self.room)
        except (urllib.error.URLError, OSError) as error:  # its page says why, then
            self._note(f"the join was refused: {error}")

    def _load(self, path: str) -> None:
        """A full page load of ``path``: the waiting page, the room page, the outage page
        (which reloads itself), or any other error page (a dead end)."""
        self.url = path
        answer, body, _ = self._get(path)
        kind = PAGE_KIND.search(body) if answer.status == 200 else None
        if kind is not None and kind.group(1) in ("waiting", "room"):
            self.mode = kind.group(1)
            found, poll = POSITION.search(body), POLL.search(body)
            self.position = int(found.group(1)) if found else None
            self.poll = float(poll.group(1)) if poll else self.poll
            self._note(f"page loaded: {self.mode}" + (f" #{self.position}" if found else ""))
            return
        refresh = REFRESH.search(body)
        self.mode = "outage" if refresh else "dead"
        self.refresh = float(refresh.group(1)) if refresh else 0.0
        self._note(
            f"page load answered {answer.status}: the tab shows "
            + ("the outage page, reloading" if refresh else "an error page")
        )

    def _run(self) -> None:
        try:
            while not (self._stop.is_set() or self._tab_closed.is_set()):
                if self.mode == "waiting":
                    self._check_in()
                elif self.mode == "room":
                    self._stay_in_room()
                elif self.mode == "outage":
                    self._stop.wait(self.refresh)
                    if not self._stop.is_set():
                        self._load(self.url)
                else:
                    return
        except Exception:
            self.harness_error = traceback.format_exc()
            self._note(f"harness error: {self.harness_error}")
        finally:
            if self._tab_closed.is_set():
                self.mode = "closed"

    def _check_in(self) -> None:
        seen = "" if self.position is None else f"?seen={self.position}"
        answer, body, headers = self._get(
            f"/rooms/{self.room}/line{seen}", headers={"HX-Request": "true"}
        )
        self.polls.append(answer)
        if answer.status != 200:  # htmx keeps the old status; waiting.js asks again soon
            self.misses += 1
            cap = min(5.0, 0.5 * self.poll)
            self._stop.wait(min(cap, 2.0 ** (self.misses - 1)) * (0.5 + random.random() / 2))
            return
        self.misses = 0
        if headers is not None and headers.get("HX-Redirect"):
            self._note("let in: HX-Redirect to the room")
            self._load(headers["HX-Redirect"])
            return
        turn = TURN.search(body)
        if turn:  # "it's your turn": waiting.js goes in after a 3 s moment; here at once
            self._note("let in: it's your turn, going in")
            self._load(html.unescape(turn.group(1)))
            return
        if 'data-state="ended"' in body:
            self.mode = "ended"
            self._note("the line says: " + " ".join(re.sub(r"<[^>]+>", " ", body).split())[:160])
            return
        found, poll = POSITION.search(body), POLL.search(body)
        if found:
            self.position = int(found.group(1))
        if poll:
            self.poll = float(poll.group(1))
        self._stop.wait(POLL_SECONDS)

    def _stay_in_room(self) -> None:
        """The room page's socket, with room.js's reconnects, until the page ends."""
        failures = 0
        while self.mode == "room" and not self._stop.is_set() and not self._tab_closed.is_set():
            ws = self._connect()
            if ws is None:
                failures += 1
            else:
                failures = 0
                try:
                    self._read(ws)
                finally:
                    self.connected = False
                    ws.shutdown()
                if self.mode != "room" or self._stop.is_set() or self._tab_closed.is_set():
                    return
                code = self.closes[-1][1] if self.closes else ABNORMAL
                if code == 4008:  # over the cap: the page stops
                    self.mode = "dead"
                    return
                if code == CLOSE_TRY_AGAIN:  # briefly unavailable: no failure, try again
                    self._stop.wait(4.0 * (0.5 + random.random() / 2))
                    continue
                failures += 1
            if failures > MAX_FAILURES:
                self._note("reloading the page")
                self.last_id, self.me = 0, None
                self._load(self.url)
                return
            delay = min(15.0, 0.5 * 2 ** (failures - 1)) * (0.5 + random.random() / 2)
            self._stop.wait(delay)

    def _connect(self) -> websocket.WebSocket | None:
        query = f"?after={self.last_id}" if self.last_id else ""
        url = f"{self.server.ws_url}/rooms/{self.room}/ws{query}"
        try:
            ws = websocket.create_connection(
                url, header=[f"Cookie: {self.visitor.cookie()}"], origin=self.server.url, timeout=5
            )
        except (websocket.WebSocketException, OSError) as error:
            self._note(f"socket refused: {error!r}"[:200])
            return None
        self.opens += 1
        self.connected = True
        self._ws = ws
        self._note("socket open" + (f" after={self.last_id}" if self.last_id else ""))
        return ws

    def _read(self, ws: websocket.WebSocket) -> None:
        """Reads frames until the socket ends, the page ends, or the tab closes."""
        ws.settimeout(0.25)
        while True:
            if self._stop.is_set() or self._tab_closed.is_set():
                with contextlib.suppress(websocket.WebSocketException, OSError):
                    ws.close(
                        status=websocket.STATUS_GOING_AWAY
                        if self._tab_closed.is_set()
                        else websocket.STATUS_NORMAL,
                        timeout=1,
                    )
                self._note("tab closed" if self._tab_closed.is_set() else "test over")
                return
            try:
                opcode, data = ws.recv_data()
            except websocket.WebSocketTimeoutException:
                continue
            except websocket.WebSocketConnectionClosedException:
                self._ended(ABNORMAL, "connection closed without a close frame")
                return
            except (websocket.WebSocketException, OSError, ValueError) as error:
                self.protocol_errors.append((time.monotonic(), repr(error)))
                self._ended(ABNORMAL, f"not a websocket frame: {error!r}")
                return
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 1005
                self._ended(code, data[2:].decode(errors="replace"))
                return
            if opcode != websocket.ABNF.OPCODE_TEXT:
                continue
            try:
                frame = json.loads(data)
            except ValueError:
                self.protocol_errors.append((time.monotonic(), repr(data[:80])))
                continue
            if self._handle(frame):
                with contextlib.suppress(websocket.WebSocketException, OSError):
                    ws.close(timeout=1)
                return

    def _ended(self, code: int, reason: str) -> None:
        self.closes.append((time.monotonic(), code, reason))
        self._note(f"socket closed {code} {reason!r}"[:200])

    def _handle(self, frame: dict[str, Any]) -> bool:
        """Shows one frame; True when the page is over (the seat has ended)."""
        kind = frame.get("type")
        if kind == "room.state":
            self.state = frame
        elif kind == "chat.history":
            if self.last_id:  # our ?after= was past the chat's end: it began again
                self.restarts += 1
                self._note("chat started over")
                self.last_id = 0
            self.me = frame.get("me")
            for message in frame.get("messages", []):
                self._show(message)
        elif kind == "message":
            self._show(frame)
        elif kind == "chat.missed":
            self.missed += int(frame.get("count", 0))
        elif kind == "gone":
            self.mode = "gone"
            self._note(f"gone: {frame.get('message')}")
            return True
        elif kind == "error":
            self._note(f"error frame: {frame.get('error')}"[:200])
        return False

    def _show(self, message: dict[str, Any]) -> None:
        if not isinstance(message.get("id"), int) or message["id"] <= self.last_id:
            return  # shown already: the page ignores repeats
        self.shown.append(message)
        self.last_id = message["id"]


class Sample(NamedTuple):
    at: float  # time.monotonic()
    seats: tuple[str, ...]  # seated tickets
    line: tuple[str, ...]  # waiting tickets, in line order
    owners: dict[str, str]  # seated ticket -> its identity


class RoomWatch:
    """Samples one room's seats and line from Redis every ``every`` seconds, in a thread;
    while Redis is down or frozen there are simply no samples."""

    def __init__(self, port: int, keys: RoomKeys, every: float = 0.2) -> None:
        self.keys = keys
        self.every = every
        self.samples: list[Sample] = []
        self.client = redis.Redis(
            port=port,
            decode_responses=True,
            socket_timeout=0.5,
            socket_connect_timeout=0.5,
            retry=Retry(NoBackoff(), 0),
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="room-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            with contextlib.suppress(redis.RedisError):
                self.samples.append(self.sample())

    def sample(self) -> Sample:
        pipe = self.client.pipeline(transaction=True)  # seats and line at one moment
        pipe.zrange(self.keys.seats, 0, -1)
        pipe.zrange(self.keys.line, 0, -1)
        pipe.hgetall(self.keys.tickets)
        seats, line, tickets = pipe.execute()
        owners = {t: json.loads(tickets[t]).get("id", "") for t in seats if t in tickets}
        return Sample(time.monotonic(), tuple(seats), tuple(line), owners)

    def since(self, start: float, end: float = float("inf")) -> list[Sample]:
        return [s for s in self.samples if start <= s.at <= end]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.client.close()


class Prober:
    """GETs each path every ``every`` seconds, each request from a thread of its own (a
    slow answer does not delay the next request), and keeps every timed answer."""

    def __init__(self, server: Server, paths: list[str], every: float = 0.5) -> None:
        self.server = server
        self.paths = paths
        self.every = every
        self.answers: list[Answer] = []
        self.opener = urllib.request.build_opener()
        self._requests: list[threading.Thread] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="prober", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for path in self.paths:
                request = threading.Thread(target=self._ask, args=(path,), daemon=True)
                request.start()
                self._requests.append(request)
            self._stop.wait(self.every)

    def _ask(self, path: str) -> None:
        answer, _, _ = timed_get(self.opener, self.server.url, path)
        self.answers.append(answer)

    def to(self, path: str, start: float = 0.0, end: float = float("inf")) -> list[Answer]:
        """The answers to ``path`` of requests sent between ``start`` and ``end``."""
        return [a for a in self.answers if a.path == path and start <= a.sent <= end]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for request in self._requests:
            request.join(HTTP_TIMEOUT + 5)
