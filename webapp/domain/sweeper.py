"""The background sweep: clears dropouts and lapsed seats in rooms nobody is polling.

Every process runs one sweeper thread; a short Redis lock lets just one of them sweep
per interval, so many workers add no load.
"""

from __future__ import annotations

import logging
import threading

from webapp.domain.rooms import WaitingRooms

log = logging.getLogger(__name__)


class Sweeper:
    def __init__(self, rooms: WaitingRooms, interval: float) -> None:
        self.rooms = rooms
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="room-sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def sweep_once(self) -> int:
        """Sweeps every room if no other process has this interval; returns items."""
        lock_ms = max(int(self.interval * 1000), 1)
        if not self.rooms.client.set(self.rooms.keys.sweep_lock, "1", nx=True, px=lock_ms):
            return 0
        return sum(self.rooms.sweep(name) for name in self.rooms.names())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sweep_once()
            except Exception:  # keep sweeping after a Redis hiccup
                log.exception("room sweep failed")
