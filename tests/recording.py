"""Recorders for tests: a publisher for domain tests where no socket listens
(``webapp.domain.visits``), and a mailbox behind a real SMTP server (the mailer's)."""

from __future__ import annotations

import email
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from typing import Any


class RecordingPublisher:
    """Stands in for the room relay where no socket listens: keeps what was told."""

    def __init__(self) -> None:
        self.changed_rooms: list[str] = []
        self.frames: list[tuple[str, dict[str, Any]]] = []

    def changed(self, room: str) -> None:
        self.changed_rooms.append(room)

    def publish(self, room: str, frame: Any) -> None:
        self.frames.append((room, dict(frame)))


class RecordingMailbox:
    """An aiosmtpd handler keeping every message it accepted: the SMTP server a test
    starts on loopback (``smtp_server``) to read what the mailer sent."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"

    def count(self) -> int:
        with self.lock:
            return len(self.messages)

    def link(self, to: str, prefix: str, timeout: float = 15.0) -> str:
        """The first link starting with ``prefix`` in a message's text to ``to``,
        waiting up to ``timeout`` seconds for it to arrive."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                mine = [m for m in self.messages if m["To"] == to]
            for message in mine:
                part = message.get_payload()[0] if message.is_multipart() else message
                text = part.get_payload(decode=True).decode()
                found = [word for word in text.split() if word.startswith(prefix)]
                if found:
                    return found[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no mail to {to} with a link {prefix}...")
            time.sleep(0.1)


@contextmanager
def smtp_server() -> Iterator[tuple[RecordingMailbox, int]]:
    """A real SMTP server on a free loopback port: (its mailbox, its port)."""
    from aiosmtpd.controller import Controller

    mailbox = RecordingMailbox()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()
