"""Scheduled drops (issue 24): a pre-queue, a start drawn in an order anyone can
verify, an end, and a line that knows the stock.

``Drops`` is the engine's face for the drop scripts (``webapp/lua/drop_*.lua``): the
sweep's turn (``tick``), an admin's start, stock reports, and the reads of the draw's
public record and of the figures a waiting page shows. ``Visits`` calls the changes
(its ``start_drop``, ``record_sold``, ``set_stock``) so the room is told; the views
read. The draw ranks as ``webapp.domain.draw.draw_rank``: ``verify_draw`` recomputes
it. No Flask here.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from webapp.domain.join_limits import Throttled
from webapp.domain.refusals import InvalidInput, Reply, check
from webapp.domain.rooms import WaitingRooms
from webapp.domain.settings import InvalidSetting, RoomSettings, checked
from webapp.redis.replies import text

MIN_ADMISSIONS = 10  # admissions measured before sold-per-admission is trusted
MAX_SOLD = 1_000_000  # units one report may count
MAX_REQUEST_ID = 100  # characters

Phase = str  # none | before | prequeue | open | ended (and sold_out, from the stock)


PLACE_SLICE = 1000  # most of a pre-queue one call of the start places (drop_start.lua)
PLACE_BUDGET_US = 5000  # microseconds one call of the start spends placing, at most
PLACE_SECONDS = 5.0  # seconds the sweep's turn carries a start on before other rooms


class Tick(NamedTuple):
    phase: Phase
    drawn: int  # how many the start has placed (-1: no start ran)
    ended: int  # waiting tickets ended (sold out, or the end clearing the line)
    placing: bool = False  # the start has more of the pre-queue to place


class Slice(NamedTuple):
    """One call of the start (drop_start.lua)."""

    started: int  # 1: this call began the start; 0: carried one on; -1: drawn already
    placed: int  # how many of the pre-queue are placed so far
    more: bool  # some are left to place: call again


class StockReport(NamedTuple):
    left: int | None  # None: not tracked
    sold: int  # every unit reported sold
    replay: bool  # the request id was counted before: nothing changed
    ended: int  # waiting tickets ended now (sold out)


class DrawRecord(NamedTuple):
    """A drop's draw, as published: the seed only once drawn."""

    state: str  # '' (no draw) | committed | drawn
    commitment: str  # SHA-256 of the seed, hex
    seed: str  # hex; '' until drawn
    entries: int  # how many were drawn
    committed_at: float | None
    drawn_at: float | None
    starts_at: int | None


class Outlook(NamedTuple):
    """What a waiting ticket is told of the stock."""

    stock_left: int | None  # None: not tracked
    per_admission: float  # units sold per admission (1 until MIN_ADMISSIONS)
    likely_sold_out: bool  # the people ahead would likely buy it all
    served_share: float  # share of the line expected to be served (0 to 1)


def phase_at(settings: RoomSettings, now: float, state: str) -> Phase:
    """Where the room is in its schedule (as drop_lib.lua's drop_phase, which decides):
    before, prequeue, open (a room without a schedule too) or ended; 'due' (the start
    is owed, the sweep holds it within a second) reads as prequeue."""
    if settings.ends_at is not None and now >= settings.ends_at:
        return "ended"
    if state in ("drawn", "placing") or settings.starts_at is None:
        return "open"
    if now >= settings.starts_at:
        return "prequeue"
    if settings.prequeue_at is not None and now >= settings.prequeue_at:
        return "prequeue"
    return "before"


SCHEDULE = ("prequeue_at", "starts_at", "ends_at")


def check_schedule(current: RoomSettings, changes: Mapping[str, Any]) -> None:
    """InvalidInput unless the drop's times, as they would be, come in order: the
    pre-queue before the start, the start before the end (a pre-queue without a start
    means nothing). Other bad values are left to the settings' own checks."""
    if not set(SCHEDULE) & set(changes):
        return
    try:
        times = {**current.as_dict(), **checked(changes)}
    except InvalidSetting:
        return
    prequeue, starts, ends = (times[name] for name in SCHEDULE)
    if prequeue is not None and starts is not None and prequeue > starts:
        raise InvalidInput("prequeue_at must not be after starts_at")
    if starts is not None and ends is not None and ends <= starts:
        raise InvalidInput("ends_at must be after starts_at")


def has_schedule(settings: RoomSettings) -> bool:
    return settings.starts_at is not None or settings.ends_at is not None


def outlook(left: int | None, sold: int, admissions: int, ahead: int, waiting: int) -> Outlook:
    """Whether the stock likely runs out before a ticket's turn: the ``ahead`` people
    in front of it would buy ``per_admission`` units each (the ratio measured since the
    first report, once ``MIN_ADMISSIONS`` admissions are counted; one each before), and
    the share of the ``waiting`` line that ``left`` units serve."""
    per = sold / admissions if admissions >= MIN_ADMISSIONS and sold > 0 else 1.0
    if left is None:
        return Outlook(None, per, False, 1.0)
    served = left / per if per > 0 else float(waiting)
    share = 1.0 if waiting <= 0 else max(0.0, min(1.0, served / waiting))
    return Outlook(left, per, left <= 0 or ahead + 1 > served, share)


class PrequeueCapped(Throttled):
    """A pre-queue join from an address or network that made its most entries there
    (``prequeue_per_address``, ``prequeue_per_network``): 429 until the drop starts."""

    def __init__(self, scope: str, most: int, retry_after: int) -> None:
        super().__init__(scope, retry_after)
        self.most = most


class PrequeueEntry(NamedTuple):
    """Where a pre-queue join was counted (given back if the join is refused)."""

    room: str
    address: str
    network: str


PER = ("address", "network")  # what a pre-queue's caps count entries by


class Drops:
    """The drop scripts of every room. Thread-safe: share one per process."""

    def __init__(self, rooms: WaitingRooms) -> None:
        self.rooms = rooms
        self.client = rooms.client
        self.keys = rooms.keys

    def in_prequeue(self, room: str, settings: RoomSettings, now: float) -> bool:
        """Whether a join now lands in the room's pre-queue (as drop_lib.lua decides)."""
        if settings.starts_at is None or settings.prequeue_at is None:
            return False
        if not settings.prequeue_at <= now < settings.starts_at:
            return False
        return self.draw(room).state not in ("drawn", "placing")

    def take_prequeue_entry(
        self, room: str, settings: RoomSettings, address: str, network: str, now: float
    ) -> PrequeueEntry:
        """Counts one pre-queue entry of ``address`` and its ``network`` against the
        room's caps, or none and raises PrequeueCapped."""
        starts = settings.starts_at or now
        kept_ms = int((max(starts - now, 0) + 86_400) * 1000)  # a day past the start
        refused = int(self._cap("take", room, address, network, settings, kept_ms))
        if refused:
            scope, most = (
                ("prequeue-address", settings.prequeue_per_address)
                if refused == 1
                else ("prequeue-network", settings.prequeue_per_network)
            )
            raise PrequeueCapped(scope, most, max(1, math.ceil(starts - now)))
        return PrequeueEntry(room, address, network)

    def give_back_prequeue_entry(self, entry: PrequeueEntry) -> None:
        self._cap("give", entry.room, entry.address, entry.network, None, 0)

    def _cap(
        self,
        op: str,
        room: str,
        address: str,
        network: str,
        settings: RoomSettings | None,
        kept_ms: int,
    ) -> Any:
        keys = {f"prequeue_{per}": self.keys.prequeue_entries(room, per) for per in PER}
        most = (
            (0, 0)
            if settings is None
            else (settings.prequeue_per_address, settings.prequeue_per_network)
        )
        return self.rooms.scripts["prequeue_cap"](
            keys=keys, args=[op, address, network, *most, kept_ms]
        )

    def tick(
        self,
        room: str,
        rescheduled: bool = False,
        rounds: int = 50,
        place_for: float = PLACE_SECONDS,
    ) -> Tick:
        """The sweep's turn: commits the seed, holds the start when due (and carries on
        one under way, a slice per call, for up to ``place_for`` seconds: the next turn
        goes on), ends the waiting tickets of a sold-out room (or of an ended one that
        clears its line) in batches. ``rescheduled``: the schedule was just changed (a
        drop held already, with a start in the future again, makes way for a new
        draw)."""
        phase, drawn, ended, placing = "none", -1, 0, False
        until = time.monotonic() + place_for
        done = 0
        while True:
            reply = self.rooms._run(
                "drop_tick",
                room,
                secrets.token_hex(32),
                "1" if rescheduled and done == 0 else "",
                PLACE_SLICE,
                PLACE_BUDGET_US,
            )
            done += 1
            phase = text(reply[0])
            drawn = max(drawn, int(reply[1]))
            ended += int(reply[2])
            placing = int(reply[3]) == 1
            if placing and time.monotonic() < until:
                continue
            if int(reply[2]) == 0 or done >= rounds:
                break
        return Tick(phase, drawn, ended, placing)

    def start_slice(
        self, room: str, who: str = "", limit: int = PLACE_SLICE, budget_us: int = PLACE_BUDGET_US
    ) -> Slice:
        """One call of the start: begins it (the draw) or carries it on, placing at
        most ``limit`` of the pre-queue within ``budget_us`` microseconds."""
        reply = self.rooms._run(
            "drop_start",
            room,
            secrets.token_hex(32),
            who,
            limit,
            budget_us,
        )
        check(text(reply[0]), Reply(room))
        return Slice(int(reply[1]), int(reply[2]), int(reply[3]) == 1)

    def start(self, room: str, who: str = "") -> int:
        """Holds the draw now (an admin's "start now"), every slice of it: how many
        were drawn, or -1 if it was begun already (then this call only helps a start
        under way to its end) or held (then nothing changes)."""
        first = step = self.start_slice(room, who)
        while step.more:
            step = self.start_slice(room, who)
        return step.placed if first.started == 1 else -1

    def record_sold(self, room: str, sold: int, request_id: str = "", who: str = "") -> StockReport:
        """Counts ``sold`` units (once per ``request_id``): the stock left falls by it
        (not below 0); at 0 the room is sold out and its waiting tickets end."""
        if isinstance(sold, bool) or not isinstance(sold, int) or not 0 <= sold <= MAX_SOLD:
            raise InvalidInput(f"sold must be a whole number from 0 to {MAX_SOLD}")
        return self._stock(room, "sold", sold, checked_request_id(request_id), who)

    def set_left(self, room: str, left: int, who: str = "") -> StockReport:
        """Sets the stock left outright (0: sold out; raising it reopens the room)."""
        if isinstance(left, bool) or not isinstance(left, int) or not 0 <= left <= 10**9:
            raise InvalidInput("left must be a whole number from 0 to 1000000000")
        return self._stock(room, "left", left, "", who)

    def _stock(self, room: str, op: str, n: int, request_id: str, who: str) -> StockReport:
        request = self.keys.stock_request(room, request_id or "-")
        reply = self.rooms._run(
            "drop_stock", room, op, n, request_id, who, more_keys={"stock_request": request}
        )
        check(text(reply[0]), Reply(room))
        left = text(reply[1])
        return StockReport(
            int(left) if left else None, int(reply[2]), int(reply[3]) == 1, int(reply[4])
        )

    # -- reads ----------------------------------------------------------------

    def draw(self, room: str) -> DrawRecord:
        """The draw's public record. The seed is read only once the draw is held, so
        the app never holds it before the start."""
        key = self.keys.drop(room).drop
        raw = self.client.hmget(
            key, "state", "commitment", "entries", "committed_at", "drawn_at", "starts_at"
        )
        state, commitment, entries, committed, drawn, starts = (
            "" if v is None else text(v) for v in raw
        )
        seed = text(self.client.hget(key, "seed") or "") if state == "drawn" else ""
        return DrawRecord(
            state=state or "",
            commitment=commitment or "",
            seed=seed or "",
            entries=int(entries or 0),
            committed_at=float(committed) if committed else None,
            drawn_at=float(drawn) if drawn else None,
            starts_at=int(float(starts)) if starts else None,
        )

    def sold_out_at(self, room: str) -> float | None:
        """When the stock last ran out (drop_stock.lua), if it did."""
        at = self.client.hget(self.keys.drop(room).drop, "sold_out_at")
        return None if at is None else float(at)

    def state(self, room: str) -> str:
        """The draw's state: '' (none), committed, placing (the start is placing the
        pre-queue) or drawn."""
        return text(self.client.hget(self.keys.drop(room).drop, "state") or "")

    def drawn_ids(self, room: str, limit: int = -1) -> list[str]:
        """The draw ids in drawn order (all with ``limit`` -1)."""
        key = self.keys.drop(room).drawn
        return [text(i) for i in self.client.lrange(key, 0, limit - 1 if limit > 0 else -1)]

    def prequeued(self, room: str) -> int:
        """How many wait in the pre-queue: waiting (checking in) but not in the line."""
        keys = self.keys.room(room)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zcard(keys.checkin)
            pipe.zcard(keys.line)
            present, in_line = pipe.execute()
        return max(int(present) - int(in_line), 0)

    def stock(self, room: str) -> tuple[int | None, int, int]:
        """The stock left (None: not tracked), units reported sold, and admissions
        since the first report."""
        keys = self.keys.room(room)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.hget(keys.settings, "stock")
            pipe.hmget(self.keys.drop(room).drop, "sold", "admitted0")
            pipe.hget(keys.stats, "count:admitted")
            left, (sold, admitted0), admitted = pipe.execute()
        left_text = text(left) if left is not None else ""
        admissions = int(admitted or 0) - int(admitted0 or 0)
        return (int(left_text) if left_text else None), int(sold or 0), max(admissions, 0)

    def outlook(self, room: str, ahead: int, waiting: int) -> Outlook:
        left, sold, admissions = self.stock(room)
        return outlook(left, sold, admissions, ahead, waiting)


def checked_request_id(request_id: object) -> str:
    """A stock report's request id: printable text of at most MAX_REQUEST_ID characters
    ('' none), else InvalidInput."""
    if not isinstance(request_id, str) or len(request_id) > MAX_REQUEST_ID:
        raise InvalidInput(f"request_id must be a string of at most {MAX_REQUEST_ID} characters")
    if request_id and not request_id.isprintable():
        raise InvalidInput("request_id must be printable")
    return request_id
