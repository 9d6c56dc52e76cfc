"""The per-process cache of each room's figures: its settings, its statistics and the
rates worked out from them, and how its estimates are shown (the calibration and the
"hard to predict" flag measured on its record).

Settings and statistics are read again when older than ``refresh`` seconds (the seed's
local cache), so a check-in costs one script call and no extra reads. Only rooms that
exist are kept, at most ``size`` of them (least recently used first out), so made-up
room names in URLs cannot grow it. Settings carry a version that every room script
answers with: a reply newer than the cache reads them again (``figures(room, version)``),
so an admin's change holds from the next request on every worker and host. A room's
record (its last hour's admissions) is read at most once per RECORD_REFRESH.

A named part of ``Reports``, the one read service (``Reports.cache``): reads only."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from webapp.domain import calibration, estimate, pace
from webapp.domain.refusals import RoomNotFound
from webapp.domain.settings import RoomSettings

if TYPE_CHECKING:  # Reports holds the cache it reads for
    from webapp.domain.reports import Reports
    from webapp.domain.rooms import WaitingRooms

CACHE_SIZE = 1024  # rooms whose figures a process keeps
RECORD_REFRESH = 60.0  # seconds a room's accuracy record is kept before it is read again
RECORD_WINDOW = 3600.0  # seconds: the record is the last hour's admissions
T = TypeVar("T")


class Figures(NamedTuple):
    """A room's settings and statistics as read at ``at`` (monotonic seconds)."""

    at: float
    settings: RoomSettings | None
    version: int
    stats: dict[str, float]
    # capacity -> (the `now` they were worked out at, the rates): they change no faster
    # than the statistics they come from, which are read once per ``refresh``
    rates: dict[int, tuple[float, pace.Rates | None]]


class RoomCache:
    def __init__(
        self,
        rooms: WaitingRooms,
        reports: Reports,
        refresh: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        size: int = CACHE_SIZE,
    ) -> None:
        self.rooms = rooms
        self.reports = reports
        self.refresh = refresh
        self.monotonic = monotonic
        self.size = size
        self._figures: OrderedDict[str, Figures] = OrderedDict()
        self._records: dict[str, tuple[float, bool]] = {}  # room -> (read at, poor)
        # room -> (read at, the calibration measured on the room's record)
        self._calibrations: dict[str, tuple[float, calibration.Calibration]] = {}
        self._lock = threading.Lock()

    def figures(self, room: str, version: int | None = None) -> Figures:
        """The room's figures, read again when older than ``refresh`` or than the
        settings ``version`` a script just answered with."""
        now = self.monotonic()
        with self._lock:
            cached = self._figures.get(room)
            if cached is not None:
                self._figures.move_to_end(room)
        stale = version is not None and cached is not None and cached.version < version
        if cached is None or stale or now - cached.at >= self.refresh:
            settings, current = self.rooms.versioned_settings(room)
            stats = self.reports.stats(room) if settings else {}
            cached = Figures(now, settings, current, stats, {})
            with self._lock:
                if settings is None:
                    self._figures.pop(room, None)  # only rooms that exist are kept
                else:
                    self._figures[room] = cached
                    self._figures.move_to_end(room)
                    while len(self._figures) > self.size:
                        self._figures.popitem(last=False)
        return cached

    def forget(self, room: str) -> None:
        """Drops the room's figures (after an admin changed it)."""
        with self._lock:
            self._figures.pop(room, None)

    def settings(self, room: str) -> RoomSettings:
        """The room's settings, at most ``refresh`` seconds old; RoomNotFound if none."""
        settings = self.figures(room).settings
        if settings is None:
            raise RoomNotFound(f"no room named {room!r}")
        return settings

    def rates(self, room: str, now: float, capacity: int = 0) -> pace.Rates | None:
        """The room's service and dropout rates from its statistics, at the ``capacity``
        a script just answered with (else its settings')."""
        cached = self.figures(room)
        if cached.settings is None:
            return None
        seats = capacity or cached.settings.capacity
        kept = cached.rates.get(seats)
        if kept is not None and abs(now - kept[0]) < self.refresh:
            return kept[1]
        settings = cached.settings
        rates = pace.limited(
            pace.rates(cached.stats, now, seats, settings.typical_stay_seconds,
                       settings.email_claim_seconds),
            settings.admit_per_minute,
        )  # fmt: skip
        cached.rates[seats] = (now, rates)
        return rates

    def calibration(self, room: str, now: float) -> calibration.Calibration:
        """How the model's figures are shown in this room, measured on its record (the
        newest admissions of the last hour, ``calibration.calibrate``)."""
        known = self._kept(self._calibrations, room)
        if known is not None:
            return known
        record = self.reports.scored(room, now, RECORD_WINDOW, calibration.RECORD_COUNT)
        return self._keep(self._calibrations, room, calibration.calibrate(record))

    def hard_to_predict(self, room: str, now: float) -> bool:
        """Whether the room's estimates have been poor lately (``estimate.poor_record``
        over the last hour's admissions): what the waiting page's words follow."""
        known = self._kept(self._records, room)
        if known is not None:
            return known
        record = self.reports.accuracy(room, now, RECORD_WINDOW)
        poor = estimate.poor_record(record.scored, record.median_error, record.in_range)
        return self._keep(self._records, room, poor)

    def _kept(self, kept: dict[str, tuple[float, T]], room: str) -> T | None:
        with self._lock:
            found = kept.get(room)
        if found is not None and self.monotonic() - found[0] < RECORD_REFRESH:
            return found[1]
        return None

    def _keep(self, kept: dict[str, tuple[float, T]], room: str, value: T) -> T:
        with self._lock:
            if len(kept) >= self.size:
                kept.clear()
            kept[room] = (self.monotonic(), value)
        return value
