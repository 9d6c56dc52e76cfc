"""Live chat delivery to this process's sockets, in id order, with no gaps or repeats.

The chat's sorted sets are the truth (``webapp.domain.chat``); pub/sub only wakes us.
Each open socket keeps its own cursor (the last id it was sent), so two tabs of one
member both get every message, on whichever worker or host they are. On a wake-up
the relay reads once for the chat (from the lowest cursor among its sockets here) and
hands each socket the messages after its own cursor. A socket that missed a wake-up
catches up on the next one, or on the periodic catch-up. Members' seen ids move on in
batches (``ack``), which lets the chat clean up what everyone has seen.

No Flask here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, Protocol

from webapp.domain.chat import Chats, Joined, Message, NotMember, Pending
from webapp.infra.periodic import run_every
from webapp.live.realtime import Fanout, Hub


class Socket(Protocol):
    def send(self, frame: dict[str, Any]) -> bool: ...


def message_frame(message: Message, member: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": message.id,
        "sender": message.sender,
        "name": message.name,
        "text": message.text,
        "ts": message.ts,
        "mine": message.sender == member,
    }


class Subscription:
    """One socket's place in one chat."""

    def __init__(self, sock: Socket, chat_id: str, member: str, cursor: int) -> None:
        self.sock = sock
        self.chat_id = chat_id
        self.member = member
        self.cursor = cursor  # the last message id sent to this socket
        self.acked = cursor
        self.lock = threading.Lock()

    def deliver(self, after: int, pending: Pending) -> bool:
        """Sends what comes after this socket's cursor. False if ``pending`` (read from
        ``after``) starts too late for this socket, which must then read for itself."""
        with self.lock:
            if after > self.cursor:
                return False
            if pending.latest < self.cursor:  # the chat was deleted and began again
                self.cursor = 0
                return False
            if pending.missed and after == self.cursor:
                self.sock.send({"type": "chat.missed", "count": pending.missed})
            for message in pending:
                if message.id > self.cursor:
                    self.sock.send(message_frame(message, self.member))
                    self.cursor = message.id
            return True


class ChatRelay:
    def __init__(self, chats: Chats, hub: Hub, clock: Callable[[], float]) -> None:
        self.chats = chats
        self.hub = hub
        self.clock = clock
        topic = hub.keys.chat_topic
        self._subs: Fanout[Subscription] = Fanout(hub, topic, lambda key, _: self.wake(key))
        self._stop = threading.Event()

    def start(self, interval: float) -> None:
        """Every ``interval`` seconds: acknowledge what was sent, and catch up any
        socket whose wake-up was lost (a pub/sub message is not guaranteed)."""
        self._stop = run_every(interval, self.upkeep, "chat-relay")

    def upkeep(self) -> None:
        self.ack_all()
        self.wake_all()

    def stop(self) -> None:
        self._stop.set()

    def attach(
        self, sock: Socket, chat_id: str, member: str, joined: Joined, after: int | None = None
    ) -> Subscription:
        """Starts the socket of a member who ``joined`` the chat (``Visits.open``: a
        reconnect keeps their seen id).

        A new page (``after`` None) gets recent history up to the member's seen id, then
        everything after it; a socket that reconnects with the last id it showed gets
        only what came after that.
        """
        if after is None or not 0 <= after <= joined.latest_id:
            after = joined.seen_id
            history = [message_frame(m, member) for m in joined.history]
            sock.send({"type": "chat.history", "messages": history, "me": member})
        sub = Subscription(sock, chat_id, member, after)
        self._subs.add(chat_id, sub)
        self.catch_up(sub)
        return sub

    def detach(self, sub: Subscription) -> None:
        self._subs.remove(sub.chat_id, sub)
        self._ack(sub)

    def send(self, sub: Subscription, name: str, text: object) -> Message:
        """Stores the member's message; Chats.send wakes every process's sockets."""
        return self.chats.send(sub.chat_id, sub.member, name, text, self.clock())

    def catch_up(self, sub: Subscription) -> None:
        """Reads and sends what this one socket has not had yet."""
        for _ in range(3):
            after = sub.cursor
            if sub.deliver(after, self.chats.read(sub.chat_id, after)):
                return

    def wake(self, chat_id: str) -> None:
        """Something was sent: one read for every local socket of the chat."""
        subs = self._subs.members(chat_id)
        if not subs:
            return
        after = min(sub.cursor for sub in subs)
        pending = self.chats.read(chat_id, after)
        for sub in subs:
            if not sub.deliver(after, pending):
                self.catch_up(sub)

    def wake_all(self) -> None:
        """The safety net for lost wake-ups: every chat with sockets here catches up."""
        for chat_id in self._subs.active():
            self.wake(chat_id)

    def ack_all(self) -> None:
        """Moves each member's seen id to what their sockets here have been sent."""
        for chat_id in self._subs.active():
            for sub in self._subs.members(chat_id):
                self._ack(sub)

    def _ack(self, sub: Subscription) -> None:
        cursor = sub.cursor
        if cursor <= sub.acked:
            return
        with contextlib.suppress(NotMember):  # their seat ended: out of the chat already
            self.chats.ack(sub.chat_id, sub.member, cursor)
        sub.acked = cursor
