"""A room socket's frames: one open connection's sends (from any thread; the same room
state is never sent twice; its own end closes it with the page told why), and the
dispatch of the frames it receives by their ``type``. The route is ``webapp.views.visitor.ws``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from redis.exceptions import RedisError
from simple_websocket import ConnectionClosed

from webapp.domain.announcer import DELETED, ENDED, RENAMED
from webapp.domain.rooms import RoomError, public_id
from webapp.live.chat_relay import Subscription
from webapp.views.shared.words import explain
from webapp.web import jsonio
from webapp.web.i18n import _

log = logging.getLogger(__name__)
MAX_FRAME_TYPE = 40
SEND_TIMEOUT = 10.0  # seconds
CLOSE_ENDED = 1000  # close code: the seat ended or the room was deleted (the gone frame says)
CLOSE_REASON_BYTES = 123  # the most a close frame's reason can hold (RFC 6455)


def unavailable() -> str:
    return _("the waiting room is briefly unavailable; please try again in a moment")


class Connection:
    """One open room socket of one visitor. ``send`` may be called from any thread."""

    def __init__(self, ws: Any, room: str, token: str, name: str) -> None:
        self.ws = ws
        self.room = room
        self.token = token
        self.name = name
        self.id = public_id(token)
        self.open = True
        self.chat: Subscription | None = None  # this socket's place in the room's chat
        self.state = ""  # the room.state last sent (its text): the same again is not sent
        # The gone frames this socket may have to send from the hub's thread, which has
        # no request (and so no language): made now, by why the seat ended
        self.farewells: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        # A client that stops reading must not stall the relay's sends for long. Only
        # with pings on: then simple-websocket reads only when select says it may.
        if getattr(ws, "ping_interval", None):
            with contextlib.suppress(AttributeError, OSError):
                ws.sock.settimeout(SEND_TIMEOUT)

    def send(self, frame: dict[str, Any]) -> bool:
        if not self.open:
            return False
        kind = frame.get("type")
        if kind == RENAMED and frame.get("id") == self.id:
            self.name = str(frame.get("name") or self.name)  # renamed in another tab
        elif kind == ENDED:  # someone's ticket ended: this socket's only if it is its own
            return frame.get("id") != self.id or self.end(str(frame.get("why", "")))
        elif kind == DELETED:
            return self.end("deleted")
        data = encoded(frame)
        with self._lock:
            if frame.get("type") == "room.state":
                # Refreshes and resends of an unchanged room cost the page nothing to
                # skip; at a thousand seats each is some 50 KB per socket.
                if data == self.state:
                    return True
                self.state = data
            try:
                self.ws.send(data)
            except (ConnectionClosed, OSError):
                self.open = False
        return self.open

    def end(self, why: str) -> bool:
        """The seat ended (or the room is gone): the page hears why, and the socket
        closes. Returns False: nothing more goes to this socket."""
        gone = self.farewells.get(why) or self.farewells.get("", {})
        if gone and self.send(gone):
            with self._lock:
                self.open = False
                close(self.ws, CLOSE_ENDED, str(gone["message"]))
        self.open = False
        return False


_last: tuple[dict[str, Any], str] | None = None  # the frame encoded last, and its text


def encoded(frame: dict[str, Any]) -> str:
    """The frame's JSON text. A fan-out hands one frame object to every socket of a
    room (``RoomRelay``): it is encoded once, not once per socket. Frames are never
    changed once sent, so the same object means the same text."""
    global _last
    last = _last
    if last is not None and last[0] is frame:
        return last[1]
    text = jsonio.dumps(frame)
    _last = (frame, text)
    return text


Handler = Callable[[Connection, dict[str, Any]], None]


class Frames:
    """Dispatch of incoming frames by their ``type``."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}

    def on(self, kind: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.handlers[kind] = handler
            return handler

        return register

    def dispatch(self, conn: Connection, raw: str | bytes) -> None:
        try:
            frame = jsonio.loads(raw)
        except ValueError as error:
            conn.send(
                {"type": "error", "error": f'{error}; a frame is a JSON object with a "type"'}
            )
            return
        kind = frame.get("type") if isinstance(frame, dict) else None
        if not isinstance(frame, dict) or not isinstance(kind, str):
            conn.send({"type": "error", "error": 'a frame is a JSON object with a "type"'})
            return
        handler = self.handlers.get(kind)
        if handler is None:
            conn.send({"type": "error", "error": f"unknown frame type {kind[:MAX_FRAME_TYPE]!r}"})
            return
        try:
            handler(conn, frame)
        except RoomError as error:
            conn.send({"type": "error", "error": explain(error), "for": kind})
        except RedisError as error:
            log.warning("%s frame in %s: Redis failed: %s", kind, conn.room, error)
            conn.send({"type": "error", "error": unavailable(), "for": kind, "retry": True})


def close(ws: Any, code: int, reason: str) -> None:
    """Closes with a reason cut to what a close frame holds (whole characters)."""
    reason = reason.encode()[:CLOSE_REASON_BYTES].decode(errors="ignore")
    with contextlib.suppress(ConnectionClosed, OSError):
        ws.close(reason=code, message=reason)
