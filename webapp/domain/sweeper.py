"""The background sweep: clears dropouts and lapsed seats in rooms nobody is polling,
admits from their lines, and (through ``Visits.sweep``) takes people whose seat ended
out of the room's chat and tells the room's open pages.

Every process runs one sweeper thread; a short Redis lock lets just one of them sweep
per interval, so many workers add no load.
"""

from __future__ import annotations

import threading

from webapp.domain.visits import Visits
from webapp.infra.periodic import run_every


class Sweeper:
    def __init__(self, visits: Visits, interval: float) -> None:
        self.visits = visits
        self.rooms = visits.rooms
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
            handled += self.visits.sweep(name)
        return handled
