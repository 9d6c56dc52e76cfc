"""One home for a join (issue 33): the one place that decides whether a join of any
kind (a room's button, the JSON API, a waitlist's sign-up, a site room, a drop's
pre-queue) takes a place, and which. No Flask here: the views translate HTTP into a
``JoinRequest`` and the outcome back into HTTP.

The order, for every kind of join:

1. **The room**: its settings (RoomNotFound: 404).
2. **A re-join** takes no new place: a live ticket the client holds in the room that
   its identity does not find (a browser's, moved or claimed there: ``Rejoined``), or
   one its identity holds (a browser's visitor id, an API client's
   ``Idempotency-Key``: the engine checks it in). It is under no limit and solves no
   puzzle.
   Then **the site's customer**, in a room that takes identities
   (``webapp.domain.identity``): the join is that customer's one place (a re-join if
   they hold it already, from any device); a bad token is ``IdentityInvalid``, none
   where the room requires one ``IdentityRequired`` (401).
   A room whose ``queueing_method`` is reject takes no new place from here on:
   ``QueueRejecting`` (503 with ``Retry-After``; the engine refuses it too, so a
   worker whose cached settings are a second old cannot let one in).
3. **The limits** (``JoinLimits``): the client's address and network, and a waitlist's
   sign-ups per address; beyond one, ``Throttled`` (429). A live room's join is
   counted by the engine's own script call (step 5: one round trip), unless a puzzle
   stands between: then they are counted first, so a throttled client solves nothing.
4. **The puzzle** (``Challenges``), when the room asks for one: a missing, wrong,
   expired or used solution is ``PuzzleRequired`` with a fresh challenge. Under
   ``auto``, a live room's join that brings no solution leaves the question to the
   engine's own script call, which reads the room's last minute of joins there (one
   round trip; after the limits, as here) and refuses with ``PuzzleAsked``, the same
   ``PuzzleRequired`` to the client. Then, for a
   join into a drop's pre-queue, **its caps**: the most entries one address and one
   network make over the pre-queue's whole length (``PrequeueCapped``, a 429 until the
   start), so a lottery place is not bought by joining often (taken before the limits
   the engine counts, given back if those refuse).
5. **The engine**: the live room's line (``Visits.join``) or the waitlist
   (``Waitlists.join``), whose own refusals (closed, sold out, admission control, a bad
   email) are raised as they are.

A join refused at 3, 4 or 5 counts against no limit and uses no identity token: what
was counted and used is given back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from limits import parse

from webapp.domain.challenge import Challenges
from webapp.domain.emails import normalise_email
from webapp.domain.entries import Entry
from webapp.domain.identity import Customer, Identities, IdentityRequired
from webapp.domain.join_limits import NO_LIMITS, Counting, JoinLimits, Limit, network_of
from webapp.domain.join_refusals import JoinRefusals, reason_of
from webapp.domain.lobby import Standing
from webapp.domain.refusals import (
    InvalidInput,
    JoinRefused,
    KnownAddress,
    PuzzleAsked,
    QueueRejecting,
)
from webapp.domain.reports import Reports
from webapp.domain.settings import RoomSettings
from webapp.domain.tickets import LIVE
from webapp.domain.visits import Visits
from webapp.domain.waitlist import NotAWaitlist, Waitlists


def amount_and_window(notation: str) -> tuple[int, int]:
    """ "20 per minute" (flask-limiter's notation, the settings' own): (20, 60)."""
    item = parse(notation)
    return item.amount, item.get_expiry()


@dataclass(frozen=True)
class JoinPolicy:
    """The joins one address and one network may make, per window (the settings
    ``WEBAPP_JOIN_LIMIT``, ``WEBAPP_JOIN_NETWORK_LIMIT``, ``WEBAPP_SIGNUP_LIMIT``)."""

    per_address: tuple[int, int]
    per_network: tuple[int, int]
    signups_per_address: tuple[int, int]

    @classmethod
    def read(cls, settings: Any) -> JoinPolicy:
        """From the app's settings (each in flask-limiter's notation)."""
        return cls(
            amount_and_window(str(settings["JOIN_LIMIT"])),
            amount_and_window(str(settings["JOIN_NETWORK_LIMIT"])),
            amount_and_window(str(settings["SIGNUP_LIMIT"])),
        )


MAX_IDEMPOTENCY_KEY = 128  # characters of an API client's Idempotency-Key


def api_identity(key: str) -> str:
    """An API client's identity to the engine from its Idempotency-Key header ("" for
    none): the same key is the same place. InvalidInput for a key too long or not
    printable."""
    if len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise InvalidInput(
            f"Idempotency-Key must be at most {MAX_IDEMPOTENCY_KEY} printable characters"
        )
    return f"api:{key}" if key else ""


@dataclass(frozen=True)
class JoinRequest:
    """A join as the views hand it over, with nothing of HTTP left in it."""

    room: str
    address: str  # the client's address (the per-address and per-network limits)
    identity: str = ""  # who joins, to the engine: a visitor id, "api:<Idempotency-Key>"
    held: str | None = None  # a ticket the client holds that its identity does not find
    # (moved or claimed here); at a waitlist, the entry it signed up with here
    name: str = ""
    email: str = ""  # as typed: the live room or the waitlist checks it
    lang: str = ""
    ref: str = ""  # a waitlist's referral code
    device: str = ""  # a waitlist's device (its anti-gaming)
    solution: object = None  # the puzzle's solution as sent; None: none was sent
    signup: bool = False  # a waitlist's sign-up form: a live room refuses it (NotAWaitlist)
    customer: str | None = None  # the site's signed token for its customer (identity)
    seat_only: bool = False  # the gate's join (issue 30): a seat at once or nothing


class Joined(NamedTuple):
    """A place in a live room's line or a seat (a re-join: the same one, checked in)."""

    standing: Standing


class Rejoined(NamedTuple):
    """The client holds a live ticket here that its identity does not find (it was
    moved or claimed here): that ticket, nothing new."""

    token: str


class SignedUp(NamedTuple):
    """An entry on a waitlist."""

    entry: Entry


class PuzzleRequired(NamedTuple):
    """The room asks for a solved puzzle and none that counts came: solve this one."""

    challenge: dict[str, Any]


class NoSeat(NamedTuple):
    """A seat-only join (the gate's) found no seat to take at once: nothing changed."""


Outcome = Joined | Rejoined | SignedUp | PuzzleRequired | NoSeat
NO_SEAT_MEMORY = 1.0  # seconds a process skips the gate's joins of a room found full
NO_SEAT_ROOMS = 1024  # rooms it remembers so at most


class Taken:
    """What a join took on its way (its count under the limits, its identity token's
    use, its pre-queue entry), given back if the join is refused after all."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def add(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def give_back(self) -> None:
        while self._undo:
            self._undo.pop()()


class Admission:
    """Decides every join (the module's docstring says in which order)."""

    def __init__(
        self,
        reports: Reports,
        visits: Visits,
        waitlists: Waitlists,
        challenges: Challenges,
        limits: JoinLimits,
        policy: JoinPolicy,
        identities: Identities,
        clock: Callable[[], float],
        refusals: JoinRefusals | None = None,
    ) -> None:
        self.reports = reports
        self.visits = visits
        self.waitlists = waitlists
        self.challenges = challenges
        self.join_limits = limits
        self.policy = policy
        self.identities = identities
        self.drops = visits.drops
        self.clock = clock
        self.refusals = refusals  # counts each refused join by reason (None: uncounted)
        self._no_seat: dict[str, float] = {}  # room -> until when it was found full

    def join(self, request: JoinRequest) -> Outcome:
        settings = self.reports.settings(request.room)
        if request.signup and settings.kind != "waitlist":
            raise NotAWaitlist(f"{request.room} is not a waitlist")
        taken = Taken()
        try:
            if settings.kind == "waitlist":
                outcome = self._sign_up(request, settings, taken)
            else:
                outcome = self._join_live(request, settings, taken)
        except PuzzleAsked:  # under auto, the engine's script found the room busy
            outcome = PuzzleRequired(self.challenge(request.room, settings))
        except KnownAddress:  # answered (its owner is mailed): counted, as a sign-up is
            raise
        except Exception as error:
            taken.give_back()
            self._refused(request, reason_of(error))
            raise
        if isinstance(outcome, PuzzleRequired | NoSeat):
            taken.give_back()
        if isinstance(outcome, PuzzleRequired):
            self._refused(request, "puzzle")
        return outcome

    def _refused(self, request: JoinRequest, reason: str | None) -> None:
        # the gate's seat-only join refuses nobody: its visitor goes on to the waiting
        # page, whose join is the one counted
        if self.refusals is not None and reason is not None and not request.seat_only:
            self.refusals.count(request.room, reason, self.clock())

    def _join_live(self, request: JoinRequest, settings: RoomSettings, taken: Taken) -> Outcome:
        room = request.room
        if request.seat_only and self._no_seat.get(room, 0.0) > self.clock():
            return NoSeat()  # found full a moment ago: no join tried, nothing counted
        if self._holds_live(room, request.held):
            return Rejoined(str(request.held))
        prequeue = self.drops.in_prequeue(room, settings, self.clock())
        # Under "auto", a join without a solution is asked the puzzle by its own script
        # call (the pre-queue's caps come after the puzzle, so a pre-queue join asks
        # here); a re-join is let through there as here.
        deferred = settings.challenge == "auto" and not request.solution and not prequeue
        puzzle = not deferred and self.challenges.needed(room, settings)
        above = settings.challenge_threshold if deferred else None
        # A re-join passes what comes before the engine (the customer's token, the
        # puzzle, the pre-queue's caps) untouched; with nothing there, the engine's own
        # re-join (its identity's live ticket, checked in, uncounted) is the same.
        ahead_of_engine = puzzle or prequeue or settings.identity != "off"
        if ahead_of_engine and request.identity and self.reports.holds(room, request.identity):
            return Joined(self._engine(request))  # its own place, checked in
        customer = self._customer(room, settings, request)
        if customer is not None:  # one place per customer: theirs, from any device
            taken.add(lambda: self.identities.give_back(room, customer))
            request = replace(request, identity=customer.identity)
            if self.reports.holds(room, customer.identity):
                return Joined(self._engine(request))
        if settings.queueing_method == "reject":  # no new place; a held one still counts
            if request.identity and self.reports.holds(room, request.identity):
                return Joined(self._engine(request))  # its own place, checked in
            raise QueueRejecting(room)
        limits = self._limits(request, waitlist=False)
        counting = self.join_limits.counting(room, limits, self.clock())
        if puzzle:  # counted first, so a throttled client solves nothing
            self._count(request, limits, taken)
            counting = NO_LIMITS
            if not self.challenges.redeem(room, request.solution):
                return PuzzleRequired(self.challenge(room, settings))
        if request.seat_only:
            return self._seat(request, settings, counting, prequeue, above)
        if customer is None and prequeue:
            # the pre-queue's caps (a customer holds one place, whatever its address)
            entry = self.drops.take_prequeue_entry(
                room, settings, request.address, network_of(request.address), self.clock()
            )
            taken.add(lambda: self.drops.give_back_prequeue_entry(entry))
        # otherwise the limits are counted by the join's own script call, or the join
        # refused (Throttled) and counted nowhere
        return Joined(self._engine(request, counting, above))

    def _seat(
        self,
        request: JoinRequest,
        settings: RoomSettings,
        counting: Counting,
        prequeue: bool,
        puzzle_above: int | None,
    ) -> Outcome:
        """A seat at once, or NoSeat (remembered a moment, so a crowd at a full room's
        gate costs no join each); never a place in line or in a drop's pre-queue."""
        if not prequeue:
            try:
                return Joined(self._engine(request, counting, puzzle_above))
            except JoinRefused:
                pass
        if len(self._no_seat) > NO_SEAT_ROOMS:  # made-up room names never get this far
            self._no_seat.clear()
        self._no_seat[request.room] = self.clock() + NO_SEAT_MEMORY
        return NoSeat()

    def _sign_up(self, request: JoinRequest, settings: RoomSettings, taken: Taken) -> Outcome:
        self._count(request, self._limits(request, waitlist=True), taken)
        # a browser that signed up here already solves no puzzle again
        if not request.held and not self._solved(request.room, settings, request):
            return PuzzleRequired(self.challenge(request.room, settings))
        return SignedUp(
            self.waitlists.join(
                request.room,
                request.name,
                request.email,
                request.ref,
                address=request.address,
                device=request.device,
                language=request.lang,
            )
        )

    def _limits(self, request: JoinRequest, waitlist: bool) -> list[Limit]:
        """The limits a join is under: its address's and its network's, and a
        waitlist's sign-ups per address."""
        policy = self.policy
        limits = [
            Limit("join-address", request.address, *policy.per_address),
            Limit("join-network", network_of(request.address), *policy.per_network),
        ]
        if waitlist:
            limits.append(Limit("signup-address", request.address, *policy.signups_per_address))
        return limits

    def _count(self, request: JoinRequest, limits: list[Limit], taken: Taken) -> None:
        """Counts the join under ``limits`` now, before what may refuse it yet (Throttled
        beyond one); given back if it is refused."""
        counted = self.join_limits.hit(request.room, limits, self.clock())
        taken.add(lambda: self.join_limits.give_back(counted))

    def challenge(self, room: str, settings: RoomSettings | None = None) -> dict[str, Any]:
        """A fresh puzzle of the room, at its cost now (under auto: the busier, the more)."""
        settings = settings or self.reports.settings(room)
        return self.challenges.issue(room, self.challenges.cost(room, settings))

    def asks_puzzle(self, room: str) -> bool:
        """Whether a new join of ``room`` must carry a solved puzzle now."""
        return self.challenges.needed(room, self.reports.settings(room))

    def _customer(self, room: str, settings: RoomSettings, request: JoinRequest) -> Customer | None:
        """The site's customer the join is for (its token used now), if the room takes
        identities and one came; IdentityRequired if the room requires one."""
        if settings.identity == "off":
            return None
        if request.customer:
            return self.identities.verify(room, settings, request.customer, self.clock())
        if settings.identity == "required":
            raise IdentityRequired("this room takes joins from its site's signed-in customers")
        return None

    def _holds_live(self, room: str, held: str | None) -> bool:
        return bool(held) and self.reports.ticket_state(room, str(held)) in LIVE

    def _solved(self, room: str, settings: RoomSettings, request: JoinRequest) -> bool:
        if not self.challenges.needed(room, settings):
            return True
        return self.challenges.redeem(room, request.solution)

    def _engine(
        self, request: JoinRequest, limits: Counting = NO_LIMITS, puzzle_above: int | None = None
    ) -> Standing:
        # an optional email to be told at when a seat is offered (the visitor must still
        # check in to keep the place); InvalidInput for one that is not an address
        try:
            email = normalise_email(request.email).address if request.email else ""
        except InvalidInput:
            if limits.keys:  # the limits refuse first, as everywhere; nothing is counted
                self.join_limits.give_back(
                    self.join_limits.hit(request.room, limits.limits, limits.now_ms / 1000)
                )
            raise
        return self.visits.join(
            request.room,
            identity=request.identity,
            name=request.name,
            email=email,
            lang=request.lang if email else "",
            limits=limits,
            seat_only=request.seat_only,
            puzzle_above=puzzle_above,
        )
