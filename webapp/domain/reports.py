"""Every read of a room, in one place: its figures and who is seated (the room's page
and its sockets), a ticket's record, the statistics behind the wait estimates, what a
joiner would be told (the lobby's cards, the wait at the back of the line, what a
place that ended may do next), and what the admin panel and the admin API read (the
line a page at a time, a ticket by support code, the audit log, the per-minute history
behind the charts, how right the wait estimates were). Reads only; every change goes
through ``Visits``, every join through ``Admission``. No Flask here.

One meaning per name: ``settings`` is the process's cached copy (``cache``, a
``RoomCache``: at most ``refresh`` seconds old, and raises RoomNotFound), what a
visitor's request reads; ``find_settings`` is the stored one or None, what the panel
shows after an admin's change. Every other read is fresh."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from webapp.domain import estimate
from webapp.domain.calibration import Scored
from webapp.domain.drops import phase_at
from webapp.domain.identity import customer_of
from webapp.domain.refusals import RoomNotFound
from webapp.domain.room_cache import CACHE_SIZE, RoomCache
from webapp.domain.rooms import WaitingRooms
from webapp.domain.settings import RoomSettings
from webapp.domain.tickets import Participant, RoomSummary, valid_room_name
from webapp.redis.replies import record, text, texts

PAGE = 50  # people per page of the line
OFFER_LOOK = 20  # seats due soonest that offers() looks at (an offer's deadline is near)
ACCURACY_READ = 5000  # admissions the accuracy figures read at most: the newest
FIGURES = ("w", "s", "joined", "admitted", "ended_dropped", "ended_left")
CARD_ORDER = {"open": 0, "paused": 1, "closed": 2}  # open rooms first, then by title


class Person(NamedTuple):
    """Someone in line or in the room, as an admin sees them."""

    token: str
    code: str  # support code
    name: str
    state: str  # waiting | offered | admitted
    position: int  # 1 = head of the line; 0 when seated
    joined: float  # when they joined
    deadline: float  # check-in or seat deadline (on the room's lease clock)
    since: float  # when seated (0 while waiting)
    connected: bool  # a room socket is open (seated people only)
    customer: str = ""  # the site's id of its customer, in a room of one place per person


class Offers(NamedTuple):
    """Seats offered to people from the line and not yet taken: how many, and when the
    first of them goes to the next in line unless taken (lease clock; None: none)."""

    seats: int
    ends: float | None


class LinePage(NamedTuple):
    people: list[Person]
    total: int  # people in line (or matching the search)
    offset: int


class AuditEntry(NamedTuple):
    id: str
    at: float
    kind: str  # create, settings, admit, remove, move, notice, notice_cleared
    who: str  # engine, api, or an admin's name
    code: str
    name: str
    detail: str
    customer: str = ""  # the site's id of the customer concerned (one place per person)


class Accuracy(NamedTuple):
    """How right the estimates were for the admissions from the line in a window."""

    scored: int
    median_error: float | None  # median of |predicted - actual| / actual
    in_range: float | None  # share whose actual wait fell inside the shown range
    points: list[tuple[float, float, float]]  # (at, predicted, actual), for a chart


class Overview(NamedTuple):
    name: str
    settings: RoomSettings
    active: int
    waiting: int
    joined_per_minute: float  # over the last 10 minutes
    admitted_per_minute: float
    dropped_per_minute: float
    notice: str


class Ended(NamedTuple):
    """A place or seat that ended, with what its holder may do next."""

    room: str
    why: str  # left removed dropped unclaimed grace session | deleted unknown replaced moved
    exists: bool  # the room still exists
    status: str  # the room's status now ('' when it is gone)
    can_join: bool  # joining again makes sense: the room exists, is live, and is not closed
    opens_at: int | None = None  # when a paused or closed room opens again, if announced


class Card(NamedTuple):
    """A room as the lobby lists it: its live figures and its (cached) settings."""

    summary: RoomSummary
    settings: RoomSettings
    phase: str = "open"  # a scheduled drop's: before (its pre-queue not open), prequeue

    @property
    def title(self) -> str:
        return self.settings.title or self.summary.name


def schedule_phase(settings: RoomSettings, now: float) -> str:
    """A drop's phase by the clock alone (no Redis read: the start is held by the sweep
    within a second of its time): before, prequeue, open or ended."""
    started = settings.starts_at is not None and now >= settings.starts_at
    return phase_at(settings, now, "drawn" if started else "")


class Reports:
    def __init__(
        self,
        rooms: WaitingRooms,
        refresh: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        size: int = CACHE_SIZE,
    ) -> None:
        """``refresh``, ``monotonic``, ``size``: the cache's (``RoomCache``)."""
        self.rooms = rooms
        self.client = rooms.client
        self.keys = rooms.keys
        self.cache = RoomCache(rooms, self, refresh, monotonic, size)

    def now(self) -> float:
        """Wall-clock seconds, on the process's one clock."""
        return self.rooms.clock()

    def _keys(self, room: str) -> Any:
        if not valid_room_name(room):
            raise RoomNotFound(f"no room named {room[:80]!r}")
        return self.keys.room(room)

    # -- the room at a glance ------------------------------------------------------

    def names(self) -> list[str]:
        return self.rooms.names()

    def settings(self, room: str) -> RoomSettings:
        """The room's cached settings (``RoomCache.settings``); RoomNotFound if none."""
        return self.cache.settings(room)

    def cards(self) -> list[Card]:
        """Every room for the lobby: open first, then paused, then closed; by title."""
        found, now = [], self.now()
        for summary in self.summaries():
            settings = self.cache.figures(summary.name).settings
            if settings is not None:
                found.append(Card(summary, settings, schedule_phase(settings, now)))
        order = CARD_ORDER.get
        return sorted(found, key=lambda c: (order(c.summary.status, 3), c.title.casefold()))

    def find_settings(self, room: str) -> RoomSettings | None:
        """The room's settings as stored now, not a worker's cached copy (the panel
        shows what an admin just changed); None if there is no such room."""
        return self.rooms.find_settings(room)

    def summary(self, room: str) -> RoomSummary | None:
        """One room's figures in one round trip; None if there is no such room."""
        if not valid_room_name(room):
            return None
        keys = self.keys.room(room)
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(keys.settings, "capacity", "status", "notice")
        pipe.zcard(keys.seats)
        pipe.zcard(keys.line)
        (capacity, status, notice), active, waiting = pipe.execute()
        if capacity is None:
            return None
        return RoomSummary(room, int(capacity), active, waiting, text(status), notice or "")

    def summaries(self) -> list[RoomSummary]:
        """Every room's figures; tidies index entries of rooms deleted meanwhile."""
        out = []
        for name in self.names():
            summary = self.summary(name)
            if summary is None:
                self.client.srem(self.keys.rooms, name)
            else:
                out.append(summary)
        return out

    def participants(self, room: str) -> list[Participant]:
        """Who holds a seat, in the order they were seated."""
        keys = self.keys.room(room)
        tokens = [text(t) for t in self.client.zrange(keys.seats, 0, -1)]
        if not tokens:
            return []
        people = []
        for token, raw in zip(tokens, self.client.hmget(keys.tickets, tokens), strict=True):
            if raw is None:
                continue
            t = record(raw)
            people.append(Participant(token, t.get("n", ""), t["st"], t["a"]))
        # ties (seated at once, as at a drop's start) by name: never an order that changes
        return sorted(people, key=lambda p: (p.since, p.name.casefold(), p.token))

    def stats(self, room: str) -> dict[str, float]:
        """The room's statistics: counters as stored, and each event's decayed figures
        (one field "n s q t" in Redis, room_lib.lua's record) as "<event>:n|s|q|t";
        "line:waiting", the line's length as read with them (the share of it that gave
        an email: ``pace.offer_hold``)."""
        keys = self.keys.room(room)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(keys.stats)
        pipe.zcard(keys.line)
        stored, waiting = pipe.execute()
        stats: dict[str, float] = {"line:waiting": float(waiting)}
        for field, value in texts(stored).items():
            figures = value.split(" ")
            if len(figures) == 1:
                stats[field] = float(value)
            else:
                stats.update(zip(_figure_names(field), map(float, figures), strict=True))
        return stats

    def overdue(self, room: str, now: float) -> int:
        """How many in line are past their check-in window but not yet dropped (the next
        script or sweep drops them): deadlines are on the lease clock, ``now`` less the
        outages the room's clock skipped."""
        keys = self.keys.room(room)
        skipped = self.client.hget(keys.clock, "skipped")
        lease = now - float(skipped or 0.0)
        return int(self.client.zcount(keys.checkin, "-inf", f"({lease!r}"))

    # -- one ticket ------------------------------------------------------------------

    def ticket_state(self, room: str, token: str) -> str | None:
        """A ticket's state as last written (waiting, offered, admitted, ended), without
        checking it in; None if unknown. A read only: it may lag a lapse not yet swept."""
        if not valid_room_name(room):
            return None
        raw = self.client.hget(self.keys.room(room).tickets, token)
        return None if raw is None else str(record(raw)["st"])

    def holds(self, room: str, identity: str) -> bool:
        """Whether ``identity`` (a visitor, an idempotency key) holds a live ticket in the
        room: its join would be a re-join (``webapp.domain.admission`` does not count it)."""
        if not valid_room_name(room):
            return False
        return bool(self.client.hexists(self.keys.room(room).identities, identity))

    def seat_deadline(self, room: str, token: str) -> float | None:
        """When a seated (or offered) ticket's seat is given up unless renewed or claimed;
        None if it holds none. On the lease clock, which runs behind ``now`` only by
        outages, so it is at worst a little early as a "time left"."""
        if not valid_room_name(room):
            return None
        score = self.client.zscore(self.keys.room(room).seats, token)
        return None if score is None else float(score)

    def offers(self, room: str) -> Offers:
        """The seats offered and not yet taken, among the OFFER_LOOK due soonest (an
        offer lasts the check-in window, or email_claim_seconds: it is due before most
        held seats), so a room that looks full with nobody waiting can say why."""
        if not valid_room_name(room):
            return Offers(0, None)
        keys = self.keys.room(room)
        due = self.client.zrange(keys.seats, 0, OFFER_LOOK - 1, withscores=True)
        if not due:
            return Offers(0, None)
        raws = self.client.hmget(keys.tickets, [token for token, _ in due])
        ends = [
            float(score)
            for (_, score), raw in zip(due, raws, strict=True)
            if raw is not None and record(raw).get("st") == "offered"
        ]
        return Offers(len(ends), min(ends) if ends else None)

    def email_of(self, room: str, token: str) -> str:
        """The email a ticket is told at ("" if none)."""
        raw = self.client.hget(self.keys.room(room).tickets, token)
        return str(record(raw).get("em", ""))

    # -- people ---------------------------------------------------------------

    def line(self, room: str, offset: int = 0, limit: int = PAGE) -> LinePage:
        """A page of the line from ``offset`` (0 = the head), in order."""
        keys = self._keys(room)
        pipe = self.client.pipeline(transaction=False)
        pipe.zcard(keys.line)
        pipe.zrange(keys.line, offset, offset + limit - 1)
        total, tokens = pipe.execute()
        people = self._people(room, tokens, first_position=offset + 1)
        return LinePage(people, int(total), offset)

    def seated(self, room: str) -> list[Person]:
        """Who holds a seat, in the order they were seated."""
        keys = self._keys(room)
        return sorted(self._people(room, self.client.zrange(keys.seats, 0, -1)), key=_since)

    def find(self, room: str, code: str) -> Person | None:
        """The person with this support code (any case, spaces ignored), if still known."""
        keys = self._keys(room)
        code = "".join(code.split()).upper()[:12]
        token = self.client.hget(keys.codes, code) if code else None
        if token is None:
            return None
        found = self._people(room, [token])
        if found:
            return found[0]
        return None

    def search(self, room: str, text: str, limit: int = PAGE) -> list[Person]:
        """People in line or seated whose name contains ``text`` or whose support code
        is ``text``. Walks the line a page at a time (bounded to 20,000 looked at)."""
        wanted = text.strip().casefold()
        if not wanted:
            return []
        by_code = self.find(room, text)
        found = [by_code] if by_code else []
        for person in [*self.seated(room), *self._walk_line(room, 20_000)]:
            if len(found) >= limit:
                break
            if wanted in person.name.casefold() and person not in found:
                found.append(person)
        return found

    def _walk_line(self, room: str, most: int) -> Iterable[Person]:
        for offset in range(0, most, 500):
            page = self.line(room, offset, 500)
            yield from page.people
            if offset + 500 >= page.total:
                return

    def _people(self, room: str, tokens: list[Any], first_position: int = 0) -> list[Person]:
        keys = self._keys(room)
        tokens = [text(t) for t in tokens]
        if not tokens:
            return []
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(keys.tickets, tokens)
        pipe.zmscore(keys.checkin, tokens)
        pipe.zmscore(keys.seats, tokens)
        records, checkins, seats = pipe.execute()
        people = []
        for i, (token, raw) in enumerate(zip(tokens, records, strict=True)):
            if raw is None:
                continue
            t = record(raw)
            state = str(t.get("st", ""))
            if state == "ended":
                continue
            waiting = state == "waiting"
            if waiting and not first_position:
                position = (self.client.zrank(keys.line, token) or 0) + 1
            else:
                position = first_position + i if waiting else 0
            deadline = checkins[i] if waiting else seats[i]
            people.append(
                Person(
                    token=token,
                    code=str(t.get("sc", "")),
                    name=str(t.get("n", "")),
                    state=state,
                    position=position,
                    joined=float(t.get("j", 0)),
                    deadline=float(deadline or 0),
                    since=float(t.get("a", 0) or 0),
                    connected=t.get("sock") == "open",
                    customer=customer_of(str(t.get("id", ""))),
                )
            )
        return people

    # -- the record -----------------------------------------------------------

    def created_at(self, room: str) -> float | None:
        """When the room was made, if its audit log still holds that (its oldest entry
        is "create"); None for a room older than what the log keeps."""
        first = self.client.xrange(self._keys(room).audit, count=1)
        if not first or text(first[0][1].get("kind", "")) != "create":
            return None
        return float(first[0][1].get("at", 0))

    def audit(self, room: str, count: int = 200, kinds: Iterable[str] = ()) -> list[AuditEntry]:
        """The newest entries first; only ``kinds`` if given (reads at most 10x count)."""
        keys = self._keys(room)
        wanted = set(kinds)
        entries = []
        for entry_id, fields in self.client.xrevrange(keys.audit, count=count * 10):
            kind = text(fields.get("kind", ""))
            if wanted and kind not in wanted:
                continue
            entries.append(
                AuditEntry(
                    id=text(entry_id),
                    at=float(fields.get("at", 0)),
                    kind=kind,
                    who=text(fields.get("who", "")),
                    code=text(fields.get("code", "")),
                    name=text(fields.get("name", "")),
                    detail=text(fields.get("detail", "")),
                    customer=text(fields.get("uid", "")),
                )
            )
            if len(entries) >= count:
                break
        return entries

    def history(self, room: str, now: float, minutes: int = 60) -> dict[str, list[float | None]]:
        """Per minute, oldest first, ending with the current minute: waiting and seats
        (sampled; None where no sample) and joins, admissions, dropouts, leaves (0 where
        none; None before the room was made)."""
        keys = self._keys(room)
        last = int(now // 60)
        span = range(last - minutes + 1, last + 1)
        fields = [f"{m}:{figure}" for m in span for figure in FIGURES]
        values = self.client.hmget(keys.history, fields)
        made = self.created_at(room)
        born = -1 if made is None else int(made // 60)
        out: dict[str, list[float | None]] = {figure: [] for figure in FIGURES}
        for i, value in enumerate(values):
            figure = FIGURES[i % len(FIGURES)]
            before = span[i // len(FIGURES)] < born  # no room yet: nothing to count
            missing = None if figure in ("w", "s") or before else 0.0  # a count of nothing
            out[figure].append(float(value) if value is not None else missing)
        out["minute"] = [float(m * 60) for m in span]
        return out

    def minutes(self, room: str) -> dict[int, dict[str, float]]:
        """Everything the history keeps (a day of minutes): minute -> figure -> value
        (counts, and the sampled line, seats and stock), for a room's report."""
        out: dict[int, dict[str, float]] = {}
        for field, value in texts(self.client.hgetall(self._keys(room).history)).items():
            minute, _, figure = field.partition(":")
            if minute.isdigit() and figure:
                out.setdefault(int(minute), {})[figure] = float(value)
        return out

    def waits(self, room: str, now: float, window: float) -> list[tuple[float, float]]:
        """(admitted at, wait) of the admissions from the line in the last ``window`` s
        (the accuracy stream's newest 5,000), oldest first."""
        since_ms = int((now - window) * 1000)
        out = []
        for _id, fields in self.client.xrange(self._keys(room).accuracy, min=since_ms):
            try:
                at, actual = float(fields["at"]), float(fields["actual"])
            except (KeyError, ValueError):
                continue
            if at >= now - window:
                out.append((at, actual))
        return out

    def accuracy(self, room: str, now: float, window: float) -> Accuracy:
        """Predicted against actual waits of the admissions in the last ``window`` s (the
        newest ACCURACY_READ of them, oldest first)."""
        keys = self._keys(room)
        since_ms = int((now - window) * 1000)
        errors, inside, points = [], 0, []
        newest = self.client.xrevrange(keys.accuracy, min=since_ms, count=ACCURACY_READ)
        for _id, fields in reversed(newest):
            try:
                wait, low, high = (float(x) for x in text(fields["predicted"]).split(",")[:3])
                actual = float(fields["actual"])
                at = float(fields["at"])
            except (KeyError, ValueError):
                continue
            if at < now - window:
                continue  # the stream's ids are Redis time; a test's clock may differ
            points.append((at, wait, actual))
            errors.append(abs(wait - actual) / max(actual, 1.0))
            inside += low <= actual <= high
        if not errors:
            return Accuracy(0, None, None, [])
        return Accuracy(len(errors), statistics.median(errors), inside / len(errors), points)

    def scored(self, room: str, now: float, window: float, count: int) -> list[Scored]:
        """The model's figures against the actual wait of the newest ``count``
        admissions from the line in the last ``window`` s that kept them (newest first):
        what the room's calibration is measured on. One read of the stream's newest
        entries, whatever its length."""
        out = []
        for _id, fields in self.client.xrevrange(self._keys(room).accuracy, count=count):
            try:
                at, actual = float(fields["at"]), float(fields["actual"])
                parts = text(fields["predicted"]).split(",")
            except (KeyError, ValueError):
                continue  # an admission with nothing predicted (a drop's pre-queue)
            if at < now - window:
                break  # newest first: the rest are older still
            if len(parts) == 5:  # "wait,low,high,model wait,model sd"
                try:
                    out.append(Scored(at, float(parts[3]), float(parts[4]), actual))
                except ValueError:
                    continue
        return out

    def overview(self, now: float) -> list[Overview]:
        """Every room with its settings and figures, by name."""
        out = []
        for name in self.names():
            settings = self.rooms.find_settings(name)
            summary = self.summary(name)
            if settings is None or summary is None:
                continue
            recent = {k: [v or 0.0 for v in vs] for k, vs in self.history(name, now, 10).items()}
            out.append(
                Overview(
                    name=name,
                    settings=settings,
                    active=summary.active,
                    waiting=summary.waiting,
                    joined_per_minute=sum(recent["joined"]) / 10,
                    admitted_per_minute=sum(recent["admitted"]) / 10,
                    dropped_per_minute=sum(recent["ended_dropped"]) / 10,
                    notice=summary.notice,
                )
            )
        return out

    # -- what a joiner would be told (from the cache, no extra read) -----------------

    def ended(self, room: str, why: str) -> Ended:
        """What a visitor whose ticket ended for ``why`` may do next (fresh settings: the
        room may be gone or closed since)."""
        settings = self.find_settings(room)
        if settings is None:
            return Ended(room, "deleted" if why == "unknown" else why, False, "", False)
        can_join = settings.status != "closed" and settings.kind == "live"
        if why == "sold_out":  # a drop's: again once stock is back
            can_join = can_join and (settings.stock is None or settings.stock > 0)
        elif why == "event_ended":
            can_join = can_join and (settings.ends_at is None or self.now() < settings.ends_at)
        return Ended(room, why, True, settings.status, can_join, settings.opens_at)

    def back_of_line(self, room: str, waiting: int) -> estimate.Estimate | None:
        """The wait a joiner would be told now, at the back of a line of ``waiting``."""
        rates = self.cache.rates(room, self.now())
        if rates is None:
            return None
        return self.cache.calibration(room, self.now()).apply(estimate.wait_for(rates, waiting))

    def chance_at_back(self, room: str, waiting: int) -> estimate.SeatChance | None:
        """Under random order: a joiner's chance of a seat soon, in a line of
        ``waiting`` and themselves; None under any other order or while the pace is
        unknown."""
        if self.settings(room).queueing_method != "random":
            return None
        rates = self.cache.rates(room, self.now())
        return None if rates is None else estimate.seat_chance(rates, waiting + 1)

    def basis(self, room: str) -> str | None:
        """What the room's estimates rest on now: "typical" (the admin's typical stay,
        nothing measured yet), "measured", or None (no estimate)."""
        rates = self.cache.rates(room, self.now())
        return None if rates is None else rates.basis


def _since(person: Person) -> float:
    return person.since


@lru_cache(maxsize=256)
def _figure_names(event: str) -> tuple[str, ...]:
    """The names of an event's four figures, "<event>:n|s|q|t" (built once each)."""
    return tuple(f"{event}:{figure}" for figure in "nsqt")
