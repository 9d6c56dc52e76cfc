"""The waiting-room engine: who holds a seat in a room and who waits in its line.

Every change is one Lua script (``webapp/lua/room_*.lua``) over one room's keys, so any
number of processes on any number of hosts agree. This module only parses arguments and
replies; the rules themselves live in ``room_lib.lua``. What a room looks like (its
figures, who is seated, a ticket's record) is read by ``webapp.domain.reports``; the
engine's refusals are ``webapp.domain.refusals`` and its values
``webapp.domain.tickets``, both named here too, as the engine's public face.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import orjson

from webapp.domain.clock import Clock, clock_of
from webapp.domain.draw import commitment_of
from webapp.domain.join_limits import NO_LIMITS, Counting
from webapp.domain.refusals import (
    GONE_REASONS,
    DrawPending,
    DropDue,
    InvalidInput,
    JoinRefused,
    NotSeated,
    NotWaiting,
    QueueRejecting,
    Reply,
    RoomClosed,
    RoomError,
    RoomNotFound,
    SettingsChanged,
    SettingsConflict,
    TicketGone,
    TicketNotFound,
    check,
)
from webapp.domain.settings import InvalidSetting, RoomSettings, checked, redis_pairs
from webapp.domain.tickets import (
    MAX_DISPLAY_NAME,
    MAX_NAME_LENGTH,
    Admission,
    Joiner,
    Participant,
    RoomSummary,
    Ticket,
    clean_display_name,
    new_ticket,
    public_id,
    ticket_reply,
    valid_room_name,
)
from webapp.redis.coalesce import Coalescer, WriteBehind
from webapp.redis.keys import Keys, RoomKeys
from webapp.redis.replies import text as _text
from webapp.redis.replies import texts
from webapp.redis.scripts import KeyMap, Scripts

__all__ = [
    "GONE_REASONS",
    "MAX_DISPLAY_NAME",
    "MAX_NAME_LENGTH",
    "Admission",
    "DrawPending",
    "InvalidInput",
    "JoinRefused",
    "NotSeated",
    "NotWaiting",
    "Participant",
    "QueueRejecting",
    "RoomClosed",
    "RoomError",
    "RoomNotFound",
    "RoomSummary",
    "SettingsChanged",
    "SettingsConflict",
    "Ticket",
    "TicketGone",
    "TicketNotFound",
    "WaitingRooms",
    "clean_display_name",
    "public_id",
    "valid_room_name",
]

UPKEEP_BATCH = 200
IDLE_TTL = 172800  # seconds: an untouched room's runtime keys expire (room_lib.lua's)
# seconds a join's prediction waits to go to Redis with others (WriteBehind's linger): a
# flash crowd's predictions go many to a call; one admitted within it is not scored
PREDICTION_LINGER = 0.01


class WaitingRooms:
    """The engine for every room. Thread-safe: share one per process."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        scripts: Scripts,
        clock: Clock | Callable[[], float] | None = None,
        batch: int = UPKEEP_BATCH,
        sweep_every: float | None = None,
        coalesce: float | None = None,
    ) -> None:
        """``clock``: the process's clock (a test's callable will do; None: the host's,
        and Redis TIME inside the scripts). ``sweep_every``: the interval at which a
        background sweep settles every room, or None if none runs. With it the scripts
        can tell an outage (no script ran for longer) from quiet, and keep that time off
        every deadline (``room_lib.lua``). ``coalesce``: joins, check-ins and predictions
        of one room made at once in this process go to Redis together
        (``webapp/redis/coalesce.py``), each waiting at most this many seconds for its
        answer; None: each is its own call."""
        self.client = client
        self.keys = keys
        self.scripts = scripts
        self.clock = clock_of(clock)
        self.batch = batch
        self._every = repr(float(sweep_every)) if sweep_every else ""
        self._check_ins: Coalescer[str, str, Ticket] | None = None
        self._looks: Coalescer[str, tuple[str, str], Ticket] | None = None
        self._joins: Coalescer[str, Joiner, Ticket] | None = None
        self._predictions: Coalescer[str, tuple[str, str], int] | None = None
        self._later: WriteBehind[str, tuple[str, str]] | None = None
        if coalesce is not None:
            self._check_ins = Coalescer(self.check_in_many, wait=coalesce)
            self._looks = Coalescer(self.look_many, wait=coalesce)
            self._joins = Coalescer(self.join_many, wait=coalesce)
            self._predictions = Coalescer(self.predict_many, wait=coalesce)
            self._later = WriteBehind(self.predict_many, linger=PREDICTION_LINGER)

    def _now(self) -> str:
        return self.clock.for_scripts()

    def argv_header(self) -> list[Any]:
        """ARGV 1 to 3 of every script about a room (room_base.lua): now ('' = Redis
        TIME), the sweep interval ('' = none runs), the upkeep batch size."""
        return [self._now(), self._every, self.batch]

    def _run(self, script: str, room: str, *args: Any, more_keys: KeyMap | None = None) -> Any:
        """Runs a room script with every key of the room by name (its own, its drop's,
        its waitlist's: the script takes those it declares) and ``more_keys``."""
        if not valid_room_name(room):
            raise RoomNotFound(f"no room named {room[:80]!r}")
        keys: KeyMap = _room_keys(self.keys, room)
        if more_keys:
            keys = {**keys, **more_keys}
        return self.scripts[script](keys=keys, args=[*self.argv_header(), *args])

    @staticmethod
    def _ticket(reply: list[Any], room: str) -> Ticket:
        return ticket_reply(reply, room)

    # -- rooms ---------------------------------------------------------------

    def configure(self, room: str, changes: Mapping[str, Any], who: str = "api") -> RoomSettings:
        """Creates the room or changes its settings; returns the settings now in force."""
        if not valid_room_name(room):
            raise InvalidInput("room names are 1 to 64 characters of a-z, 0-9 and -")
        try:
            wanted = checked(changes)  # refuses unknown or bad settings, writes nothing
        except InvalidSetting as error:
            raise InvalidInput(str(error)) from None
        defaults = RoomSettings().to_redis()
        pairs = redis_pairs(wanted)
        # A seed for a lottery's draw, used only if the room comes to lottery ordering
        # now: its SHA-256 is published at once, the seed revealed at the draw.
        seed = secrets.token_hex(32)
        commitment = commitment_of(seed)
        reply = self._run(
            "room_configure",
            room,
            who,
            seed,
            commitment,
            len(wanted),
            *pairs,
            *defaults,
        )
        check(_text(reply[0]), Reply(room, detail=_text(reply[9])))  # "conflict": why
        self.client.sadd(self.keys.rooms, room)
        return self.find_settings(room) or RoomSettings().changed(changes)  # unless deleted since

    def find_settings(self, room: str) -> RoomSettings | None:
        """The room's settings as stored now (no cache); None if there is no such room."""
        return self.versioned_settings(room)[0]

    def versioned_settings(self, room: str) -> tuple[RoomSettings | None, int]:
        """The room's settings (None if there is no such room) and their version, which
        every change raises by one."""
        if not valid_room_name(room):
            return None, 0
        raw = texts(self.client.hgetall(self.keys.room(room).settings))
        if not raw:
            return None, 0
        return RoomSettings.from_redis(raw), int(raw.get("version") or 0)

    def delete(self, room: str) -> bool:
        """Removes the room and everything in it. One DEL: all its keys share a slot."""
        if not valid_room_name(room):
            return False
        keys = [*self.keys.room(room).all(), *self.keys.waitlist(room).all()]
        keys += [self.keys.deliveries(room), self.keys.claims(room)]  # mail, claim links
        keys.append(self.keys.site_keys(room))
        keys += [self.keys.prequeue_entries(room, per) for per in ("address", "network")]
        removed = self.client.delete(*keys)
        self.client.srem(self.keys.rooms, room)
        return bool(removed)

    def names(self) -> list[str]:
        return sorted(_text(n) for n in self.client.smembers(self.keys.rooms))

    def rename(self, room: str, token: str, name: str) -> bool:
        """Gives a live ticket a new display name (already cleaned); False if none."""
        return bool(self._run("room_rename", room, token, name))

    def set_email(self, room: str, token: str, email: str, lang: str = "en") -> bool:
        """Gives a waiting ticket the email (normalised) it is told at when a seat is
        offered to it, or removes it (``email`` empty); False if the ticket is not
        waiting (nothing changed)."""
        return bool(self._run("room_email", room, token, email, lang))

    # -- tickets -------------------------------------------------------------

    def join(
        self,
        room: str,
        identity: str = "",
        name: str = "",
        max_ahead: int | None = None,
        version: int | None = None,
        email: str = "",
        lang: str = "",
        limits: Counting = NO_LIMITS,
        puzzle_above: int | None = None,
    ) -> Ticket:
        """Admits the visitor, or puts them at the back of the line.

        The same ``identity`` joining again gets its live ticket back (a check-in).
        ``max_ahead`` is admission control: refuse if more people would be ahead.
        ``version``: the settings version ``max_ahead`` was worked out from; if the
        settings changed since, nothing is done and SettingsChanged is raised.
        ``email`` (normalised by the caller) and ``lang``: told by the outbox (an email)
        when a seat is offered to this ticket. ``limits``: the join's limits
        (``JoinLimits.counting``), counted in the same call if it takes a new place,
        else Throttled and counted nowhere; a re-join is under none. ``puzzle_above``:
        the room's "auto" puzzle threshold for a joiner who brought no solution: a new
        place is refused (PuzzleAsked, counted nowhere) while more than that many
        joined in the last minute (``Challenges.needed``'s rule, read in the same call).
        """
        token, code = new_ticket()
        joiner = (
            token,
            identity,
            name,
            "" if max_ahead is None else str(max_ahead),
            "" if version is None else str(version),
            email,
            lang if email else "",
            code,
            "" if puzzle_above is None else str(puzzle_above),
            limits,
        )
        if self._joins is not None:
            return self._joins(room, joiner)
        outcome = self.join_many(room, [joiner])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def join_many(self, room: str, joiners: Sequence[Joiner]) -> list[Ticket | Exception]:
        """Joins of several visitors of one room in one script call, in order: each
        ticket, or the refusal ``join`` would raise for it. A scheduled drop whose start
        is owed begins it first (``drop_start.lua``: its first slice; the sweep carries
        it on), then those joiners join again, behind the whole pre-queue."""

        def run(batch: Sequence[Joiner]) -> list[Ticket | Exception]:
            limits = [key for j in batch for key in j[-1].keys]
            args = (a for j in batch for a in (*j[:-1], *j[-1].args))
            replies = self._run("room_join", room, *args, more_keys={"limits": limits})
            return [
                j[-1].refusal(reply[1:]) if _text(reply[0]) == "throttled" else
                self._outcome(reply, room)
                for j, reply in zip(batch, replies, strict=True)
            ]  # fmt: skip

        outcomes = run(joiners)
        owed = [i for i, outcome in enumerate(outcomes) if isinstance(outcome, DropDue)]
        if owed:
            self._run("drop_start", room, secrets.token_hex(32), "")
            for i, outcome in zip(owed, run([joiners[i] for i in owed]), strict=True):
                outcomes[i] = outcome
        return outcomes

    def check_in(self, room: str, token: str) -> Ticket:
        if self._check_ins is not None:
            return self._check_ins(room, token)
        return self._ticket(self._run("room_checkin", room, token)[0], room)

    def check_in_many(self, room: str, tokens: Sequence[str]) -> list[Ticket | Exception]:
        """Check-ins of several tickets of one room in one script call, in order: each
        ticket, or the refusal ``check_in`` would raise for it."""
        replies = self._run("room_checkin", room, *tokens)
        return [self._outcome(reply, room) for reply in replies]

    def look(self, room: str, token: str, holder: str | None) -> Ticket:
        """A waiting page's look at its ticket (``room_look.lua``): PlaceMoved if the
        place went to a browser other than ``holder`` (the page's holder id; None: it
        never took a moved place); else a waiting ticket checks in, and an offered or
        held seat is returned as it is (a page that is not the room claims nothing).
        Raises as a check-in does for a ticket that ended."""
        if self._looks is not None:
            return self._looks(room, (token, holder or ""))
        outcome = self.look_many(room, [(token, holder or "")])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def look_many(self, room: str, pages: Sequence[tuple[str, str]]) -> list[Ticket | Exception]:
        """Looks of several pages (token, holder id) at tickets of one room in one
        script call, in order: each ticket, or the refusal ``look`` would raise."""
        holders = [self.keys.move_holder(room, token) for token, _ in pages]
        args = [value for page in pages for value in page]
        replies = self._run("room_look", room, *args, more_keys={"holders": holders})
        return [self._outcome(reply, room) for reply in replies]

    def _outcome(self, reply: list[Any], room: str) -> Ticket | Exception:
        """A reply of a batch: the ticket, or what ``_ticket`` raises for it."""
        try:
            return self._ticket(reply, room)
        except (RoomError, SettingsChanged, DropDue) as refusal:
            return refusal

    def renew(self, room: str, token: str, jti: str, presented: str) -> tuple[Ticket, str] | None:
        """A site room's seat renewed by the pass ``presented`` (its jti): it becomes the
        pass ``jti`` and the ticket checks in, in one call (``room_renew.lua``). None if
        ``presented`` is not the seat's last pass (a copy another holder renewed first:
        nothing changed); else the ticket and its identity ('' = none). Raises as a
        check-in does for a ticket that ended."""
        ticket, identity = self._run("room_renew", room, token, jti, presented)
        if _text(ticket[0]) == "copied":
            return None
        return self._ticket(ticket, room), _text(identity)

    def leave(self, room: str, token: str, why: str = "left", who: str = "") -> Ticket:
        """Ends the ticket (idempotent); ``why`` removed with ``who``: an admin did."""
        return self._ticket(self._run("room_leave", room, token, why, who), room)

    def admit(
        self,
        room: str,
        count: int,
        request_id: str = "",
        override: bool = False,
        who: str = "",
        token: str = "",
    ) -> Admission:
        """Offers seats to the next ``count`` in line (only as many as are free unless
        ``override``), or to the one waiting ``token``. The same ``request_id`` again
        admits nobody new. In a waitlist room: admits the next ``count`` confirmed
        entries, or the one entry ``token`` (``webapp.domain.waitlist``)."""
        request = self.keys.admit_request(room, request_id)
        code, tokens, replay = self._run(
            "room_admit",
            room,
            count,
            request_id,
            "1" if override else "0",
            who,
            token,
            more_keys={"admit_request": request},
        )
        check(_text(code), Reply(room))
        return Admission(tuple(orjson.loads(tokens)), _text(replay) == "1")

    def move(self, room: str, token: str, place: int, who: str) -> Ticket:
        """Moves a waiting ticket to ``place`` in line (1 = the front)."""
        return self._ticket(self._run("room_move", room, token, place, who), room)

    def set_notice(self, room: str, text: str, who: str) -> None:
        """The notice every waiting page and the room show ('' clears it)."""
        check(_text(self._run("room_notice", room, text, who)), Reply(room))

    def predict(
        self,
        room: str,
        token: str,
        wait: float,
        low: float,
        high: float,
        model: tuple[float, float] | None = None,
        later: bool = False,
    ) -> None:
        """Keeps the wait shown to a ticket at its join, to score it at its admission;
        ``model``: the model's own (wait, sd) before calibration, which the room's
        calibration is measured on (``webapp.domain.calibration``). ``later``: written
        after the caller goes on (with ``coalesce``: by a thread of the process, batched
        with the others made meanwhile), so a join answers after one round trip, its own
        script's; a ticket admitted before it is written (a few milliseconds) keeps no
        prediction, and the accuracy figures skip it."""
        prediction = (token, predicted(wait, low, high, model))
        if later and self._later is not None:
            self._later(room, prediction)
        elif self._predictions is not None:
            self._predictions(room, prediction)
        else:
            self.predict_many(room, [prediction])

    def written(self, timeout: float = 5.0) -> bool:
        """Waits until the predictions written behind so far are in Redis (``flush``);
        False on timeout."""
        return self._later.flush(timeout) if self._later is not None else True

    def predict_many(self, room: str, predictions: Sequence[tuple[str, str]]) -> list[int]:
        """Several ``predict`` of one room in one script call: (token, ``predicted(...)``)
        each; 1 for each kept, 0 for a ticket that no longer waits."""
        keys = _room_keys(self.keys, room)
        pairs = [part for prediction in predictions for part in prediction]
        kept = self.scripts["room_predict"](keys=keys, args=[IDLE_TTL, *pairs])
        return [int(k) for k in kept]

    def presence(self, room: str, token: str, op: str, hold: float = 0) -> Ticket:
        """A live connection of a seated ticket: op is open, beat or close."""
        return self._ticket(self._run("room_presence", room, token, op, hold), room)

    def sweep(self, room: str, rounds: int = 50) -> int:
        """Runs the room's upkeep until nothing is left to do (bounded); returns items."""
        total = 0
        for _ in range(rounds):
            handled = int(self._run("room_sweep", room))
            if handled <= 0:
                break
            total += handled
        return total

    def set_pace(self, room: str, hint: str) -> bool:
        """Keeps the hint the room's check-in windows are granted from ("a b c until",
        ``webapp.domain.windows``; '' = none); False if the room has no clock."""
        if not valid_room_name(room):
            return False
        return bool(self.scripts["room_pace"](keys=_room_keys(self.keys, room), args=[hint]))

    def room_keys(self, room: str) -> RoomKeys:
        return self.keys.room(room)


@lru_cache(maxsize=4096)
def _room_keys(keys: Keys, room: str) -> Mapping[str, str]:
    """Every key of a room by name (its own, its drop's, its waitlist's), built once per
    room rather than on every call; never changed (a read-only view)."""
    return MappingProxyType(
        {**keys.room(room).named(), **keys.drop(room).named(), **keys.waitlist(room).named()}
    )


def predicted(wait: float, low: float, high: float, model: tuple[float, float] | None) -> str:
    """A prediction as the room keeps it: "wait,low,high" shown, then the model's own
    ",wait,sd" when given (room_predict.lua keeps it, room_lib.lua scores the first three)."""
    text = f"{wait:.1f},{low:.1f},{high:.1f}"
    return text if model is None else f"{text},{model[0]:.1f},{model[1]:.1f}"
