"""The background sweep: clears dropouts and lapsed seats in rooms nobody is polling,
and takes people whose seat ended out of the room's chat (so they no longer hold its
cleanup back). The room and its chat live in different cluster slots, so that second
step follows the first rather than being part of it.

Every process runs one sweeper thread; a short Redis lock lets just one of them sweep
per interval, so many workers add no load.
"""

from __future__ import annotations

import threading

from webapp.domain.chat import Chats, room_chat_id
from webapp.domain.rooms import WaitingRooms, public_id
from webapp.periodic import run_every


class Sweeper:
    def __init__(self, rooms: WaitingRooms, interval: float, chats: Chats | None = None) -> None:
        self.rooms = rooms
        self.chats = chats
        self.interval = interval
        self._stop: threading.Event | None = None

    def start(self) -> None:
        self._stop = run_every(self.interval, self.sweep_once, "room-sweeper")

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def sweep_once(self) -> int:
        """Sweeps every room if no other process has this interval; returns items."""
        lock_ms = max(int(self.interval * 1000), 1)
        if not self.rooms.client.set(self.rooms.keys.sweep_lock, "1", nx=True, px=lock_ms):
            return 0
        handled = 0
        for name in self.rooms.names():
            handled += self.rooms.sweep(name)
            if self.chats is not None:
                handled += self.tidy_chat(name)
        return handled

    def tidy_chat(self, room: str) -> int:
        """Takes everyone without a seat out of the room's chat; returns how many."""
        assert self.chats is not None
        chat_id = room_chat_id(room)
        members = set(self.chats.members(chat_id))
        if not members:
            return 0
        seated = {public_id(p.token) for p in self.rooms.participants(room)}
        gone = members - seated
        for member in gone:
            self.chats.leave(chat_id, member)
        return len(gone)
