"""The lobby: the engine's answers with a wait estimate and a poll interval attached.

Each process caches every room's settings and statistics for ``refresh`` seconds (the
seed's local cache), so a check-in costs one script call and no extra reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from webapp.domain import estimate
from webapp.domain.rooms import RoomNotFound, RoomSettings, Ticket, WaitingRooms


class Standing(NamedTuple):
    """A ticket with what the visitor is told about it."""

    ticket: Ticket
    estimate: estimate.Estimate | None
    poll_after: float


class _Cached(NamedTuple):
    at: float
    settings: RoomSettings | None
    stats: dict[str, float]


class Lobby:
    def __init__(
        self,
        rooms: WaitingRooms,
        refresh: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rooms = rooms
        self.refresh = refresh
        self.monotonic = monotonic
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.Lock()

    def _room(self, room: str) -> _Cached:
        now = self.monotonic()
        cached = self._cache.get(room)
        if cached is None or now - cached.at >= self.refresh:
            cached = _Cached(now, self.rooms.settings(room), self.rooms.stats(room))
            with self._lock:
                self._cache[room] = cached
        return cached

    def forget(self, room: str) -> None:
        """Drops the cached figures of a room (after an admin changed it)."""
        with self._lock:
            self._cache.pop(room, None)

    def settings(self, room: str) -> RoomSettings:
        settings = self._room(room).settings
        if settings is None:
            raise RoomNotFound(f"no room named {room!r}")
        return settings

    def join(self, room: str, identity: str = "", name: str = "") -> Standing:
        cached = self._room(room)
        max_ahead = None
        if cached.settings is not None and cached.settings.max_wait_seconds is not None:
            max_ahead = estimate.max_ahead_for(
                cached.stats, self._wall(), cached.settings.max_wait_seconds
            )
        ticket = self.rooms.join(room, identity=identity, name=name, max_ahead=max_ahead)
        return self.standing(room, ticket)

    def check_in(self, room: str, token: str) -> Standing:
        return self.standing(room, self.rooms.check_in(room, token))

    def standing(self, room: str, ticket: Ticket) -> Standing:
        cached = self._room(room)
        dropout = cached.settings.dropout_seconds if cached.settings else 30
        if ticket.seated:
            session = cached.settings.session_seconds if cached.settings else 600
            return Standing(ticket, estimate.Estimate(0.0, 0.0), round(min(session / 3, 30.0), 1))
        guess = None
        if ticket.room_status != "paused":
            guess = estimate.wait_for(cached.stats, ticket.now, ticket.ahead)
        return Standing(ticket, guess, estimate.poll_after(dropout, ticket.position, guess))

    def _wall(self) -> float:
        """Wall-clock seconds: the engine's clock when a test set one, else this host's."""
        return self.rooms.clock() if self.rooms.clock is not None else time.time()
