"""Every change to who is where, and to the rooms themselves, with all its side effects,
in one place.

Ending a ticket also takes its holder out of the room's chat, tells the room's open
pages and closes the holder's own sockets; an admission tells the room; a notice
reaches the room's sockets at once; a room socket's open and close are its holder's
presence and chat membership; a room's settings, status and deletion each run their
script, drop this process's cached settings and tell the room. The pages, the JSON
API, the admin panel, the room socket and the background sweep all call these, so no
path forgets a step. The room and its chat live in different cluster slots, so the chat
step follows the room script rather than being part of it. No Flask here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from webapp.domain import windows
from webapp.domain.announcer import Announcer, deleted_frame, ended_frame, renamed_frame
from webapp.domain.chat import Chats, Joined, room_chat_id
from webapp.domain.drops import Drops, StockReport, check_schedule, has_schedule
from webapp.domain.join_limits import NO_LIMITS, Counting
from webapp.domain.lobby import Lobby, Standing
from webapp.domain.refusals import PlaceMoved
from webapp.domain.reports import Ended, Reports
from webapp.domain.rooms import RoomError, RoomNotFound, TicketGone, TicketNotFound, WaitingRooms
from webapp.domain.seat_passes import ROOM, Revocations
from webapp.domain.settings import RoomSettings
from webapp.domain.tickets import Admission, Ticket, public_id
from webapp.domain.waitlist import Waitlists
from webapp.domain.webhooks import Webhooks

log = logging.getLogger(__name__)
MAX_NOTICE = 280  # characters
PACED_ROOMS = 10_000  # rooms whose last hint a process remembers (then it starts afresh)


class Place(NamedTuple):
    """One of a visitor's tickets as a page shows it: ``state`` is waiting (``standing``
    set), turn (a seat is offered: claim it by going in), seated (holds a seat), or ended
    (``ended`` set), or moved (to another browser: ``Visits.page_place``). ``left``:
    seconds the seat is held without going in."""

    room: str
    state: str
    standing: Standing | None = None
    left: float | None = None
    ended: Ended | None = None


class Opened(NamedTuple):
    """A room socket's start: the seat it holds and its place in the room's chat."""

    ticket: Ticket
    chat: Joined


class Visits:
    def __init__(
        self,
        rooms: WaitingRooms,
        reports: Reports,
        chats: Chats,
        announcer: Announcer,
        lobby: Lobby,
        waitlists: Waitlists,
        revocations: Revocations | None = None,
    ) -> None:
        self.rooms = rooms
        self.revocations = revocations  # a site room's ended seats: their passes refused
        self.reports = reports
        self.chats = chats
        self.announcer = announcer
        self.lobby = lobby
        self.waitlists = waitlists
        self._paced: dict[str, float] = {}  # room -> when this process last hinted its pace
        self.drops = Drops(rooms)
        self.webhooks: Webhooks | None = None  # a new room's webhooks flag (services.build)

    # -- the room itself --------------------------------------------------------

    def configure(self, room: str, changes: Mapping[str, Any], who: str = "api") -> RoomSettings:
        """Creates the room or changes its settings (the script audits it): this process
        forgets its cached settings and the room's open pages are told, since a change
        (a capacity raise, a reopen) can let people in from the line."""
        before = self.rooms.find_settings(room)
        check_schedule(before or RoomSettings(), changes)
        settings = self.rooms.configure(room, changes, who=who)
        if before is None and self.webhooks is not None:
            self.webhooks.flag_rooms([room])
        if has_schedule(settings) or settings.stock is not None:
            # a drop's seed is committed at once; a new start after a drop, a new draw
            self.drops.tick(room, rescheduled=bool({"prequeue_at", "starts_at"} & set(changes)))
        self.reports.cache.forget(room)
        self.announcer.changed(room)
        return settings

    def set_status(self, room: str, status: str, who: str = "api") -> RoomSettings:
        """Opens, pauses or closes the room (a change of settings like any other)."""
        return self.configure(room, {"status": status}, who=who)

    def delete(self, room: str, who: str = "api") -> bool:
        """Removes the room with everything in it, its audit log too (so the deletion is
        logged here); its chat ends, and its open pages say so and close their sockets.
        False if there was no such room."""
        self._revoke(room, ROOM)  # before the settings go: every pass of the room
        deleted = self.rooms.delete(room)
        self.reports.cache.forget(room)
        self.announcer.forget(room)
        if not deleted:
            return False
        log.info("room %s deleted by %s, with its line, seats and audit log", room, who)
        chat = room_chat_id(room)
        for member in self.chats.members(chat):
            self.chats.leave(chat, member)
        self.announcer.publish(room, deleted_frame())
        return True

    # -- people -----------------------------------------------------------------

    def join(
        self,
        room: str,
        identity: str = "",
        name: str = "",
        email: str = "",
        lang: str = "",
        limits: Counting = NO_LIMITS,
        seat_only: bool = False,
        puzzle_above: int | None = None,
    ) -> Standing:
        """A visitor asks in (or, with a live identity, checks in again): the room is
        told, whether they took a seat or a place in line. ``email`` (normalised): the
        visitor is told there when a seat is offered to them. ``limits``: the join's,
        counted in its own script call (Throttled beyond one; a re-join is under none).
        ``seat_only``: a seat at once or nothing (JoinRefused: nothing changed).
        ``puzzle_above``: the "auto" puzzle's threshold, checked in that same call
        (PuzzleAsked: nothing changed; ``WaitingRooms.join``)."""
        standing = self.lobby.join(
            room, identity=identity, name=name, email=email, lang=lang, limits=limits,
            seat_only=seat_only, puzzle_above=puzzle_above,
        )  # fmt: skip
        self.announcer.changed(room, standing.ticket)
        # (a drop's pre-queue has no place yet, so nothing to predict: position 0)
        if standing.raw is not None and not standing.ticket.seated and standing.ticket.position:
            low, high = standing.raw.range
            model = standing.model or standing.raw
            self.rooms.predict(
                room, standing.ticket.token, standing.raw.wait, low, high,
                (model.wait, model.spread), later=True,
            )  # fmt: skip
        return standing

    def check_in(self, room: str, token: str, shown: str | None = None) -> Standing:
        """A waiting visitor's check-in (their place stays alive; an offered seat is
        claimed), with the wait estimate attached (``Lobby.standing``; ``shown``: the
        figure shown at the previous poll). The room is told when the check-in's upkeep
        changed its figures (``Announcer.saw``)."""
        ticket = self.rooms.check_in(room, token)
        self.announcer.saw(room, ticket)
        return self.lobby.standing(room, ticket, shown)

    def place(self, room: str, token: str, shown: str | None = None) -> Place:
        """Where a ticket stands, for a page: a waiting ticket checks in (its place stays
        alive); an offered or held seat is only looked at, so a page that is not the
        room neither claims it nor keeps it beyond its own deadline; an ended ticket
        says why. Never joins."""
        state = self.reports.ticket_state(room, token)
        if state in ("offered", "admitted"):
            deadline = self.reports.seat_deadline(room, token)
            if deadline is not None and deadline > self.reports.now():
                return self._seat(room, state, deadline)
        try:
            standing = self.check_in(room, token, shown)
        except (TicketGone, TicketNotFound, RoomNotFound) as refusal:
            return self._ended(room, refusal)
        if standing.ticket.seated:  # this check-in claimed an offered seat
            deadline = self.reports.seat_deadline(room, token)
            return self._seat(room, "offered", deadline or self.reports.now())
        return Place(room, "waiting", standing)

    def page_place(
        self, room: str, token: str, holder: str | None, shown: str | None = None
    ) -> Place:
        """As ``place``, for a page of the browser ``holder`` (its id as a moved place's
        holder; None: it never took one), in one round trip (``WaitingRooms.look``):
        state "moved" if the place went to another browser (``Moves``). The waiting
        page's poll, which every visitor in line makes."""
        try:
            ticket = self.rooms.look(room, token, holder)
        except PlaceMoved:
            return Place(room, "moved")
        except (TicketGone, TicketNotFound, RoomNotFound) as refusal:
            return self._ended(room, refusal)
        self.announcer.saw(room, ticket)  # the look's upkeep may have changed the room
        if ticket.state in ("offered", "admitted"):  # looked at, not claimed
            deadline = self.reports.seat_deadline(room, token)
            return self._seat(room, ticket.state, deadline or self.reports.now())
        return Place(room, "waiting", self.lobby.standing(room, ticket, shown))

    def _ended(self, room: str, refusal: RoomError) -> Place:
        """The ended place a look or check-in's refusal means."""
        if isinstance(refusal, TicketGone):
            why = refusal.why
        else:
            why = "deleted" if isinstance(refusal, RoomNotFound) else "unknown"
        return Place(room, "ended", ended=self.reports.ended(room, why))

    def _seat(self, room: str, state: str, deadline: float) -> Place:
        kind = "turn" if state == "offered" else "seated"
        return Place(room, kind, left=max(deadline - self.reports.now(), 0.0))

    def enter(self, room: str, token: str, hold: float, claims: bool = False) -> Ticket:
        """A page of a seat's holder opens (or, without a socket, reloads): the seat is
        held ``hold`` seconds from now, so it lapses soon after the page closes, as a
        closed socket's does. ``claims``: the seat was offered and is taken now; the
        room is told."""
        ticket = self.rooms.presence(room, token, "beat", hold=hold)
        if claims:
            self.announcer.changed(room, ticket)
        else:
            self.announcer.saw(room, ticket)
        return ticket

    def set_email(self, room: str, token: str, email: str, lang: str = "en") -> bool:
        """Gives a waiting place the email it is told at when a seat is offered, or
        takes it away (``email`` empty); False if the place is not waiting."""
        return self.rooms.set_email(room, token, email, lang)

    def rename(self, room: str, token: str, name: str) -> bool:
        """A visitor's new display name on their ticket; the room hears of it, and the
        visitor's own open sockets (another tab) sign their next messages with it."""
        renamed = self.rooms.rename(room, token, name)
        if renamed:
            self.announcer.publish(room, renamed_frame(token, name))
            self.announcer.changed(room)
        return renamed

    def end(self, room: str, token: str, why: str = "left", who: str = "") -> Ticket:
        """Ends the ticket (its seat or its place), takes it out of the room's chat, tells
        the room and closes the holder's open sockets (another tab; an admin's removal).
        ``why`` removed and ``who``: an admin's doing, audited."""
        ticket = self.rooms.leave(room, token, why=why, who=who)
        self._revoke(room, public_id(token))
        self.chats.leave(room_chat_id(room), public_id(token))
        self.announcer.publish(room, ended_frame(token, ticket.why or why))
        self.announcer.changed(room, ticket)
        return ticket

    def _revoke(self, room: str, subject: str) -> None:
        """In a site room, every pass of the seat ``subject`` (or of the whole room) is
        refused by every process's gate from now on (``seat_passes.Revocations``)."""
        if self.revocations is None:
            return
        try:
            settings = self.reports.settings(room)
        except RoomNotFound:
            return
        if settings.site_url:
            self.revocations.revoke(room, subject, settings.pass_renew_seconds, self.reports.now())

    def renew(self, room: str, token: str) -> Ticket:
        """A site room's visitor is still on the site (the gate renews a pass past half
        its life, or the room's page hands one out): the seat is held the room's
        ``session_seconds`` more, as a check-in holds it (an offered seat is taken)."""
        ticket = self.rooms.check_in(room, token)
        self.announcer.saw(room, ticket)
        return ticket

    def renew_pass(self, room: str, token: str, jti: str, presented: str) -> str | None:
        """The gate's renewal of a site room's seat (``renew``) by the pass ``presented``,
        which becomes the pass ``jti`` in the same call: the ticket's identity ('' =
        none), or None if the pass is a copy another holder renewed first, the seat
        ended or is not held (an offered seat is taken, as a check-in takes it)."""
        try:
            found = self.rooms.renew(room, token, jti, presented)
        except RoomError:  # ended (why: the waiting page says), or the room went
            return None
        if found is None:
            return None
        ticket, identity = found
        self.announcer.saw(room, ticket)
        return identity if ticket.seated else None

    def release(
        self, room: str, token: str, sold: int = 0, who: str = "site"
    ) -> tuple[Ticket, int]:
        """The site let its visitor go (after checkout, on logout): the seat ends
        (``released``), the next in line is offered it at once, and what was sold is
        recorded (``record_sale``; only the site itself may report it, with its site key:
        the caller's check). Returns the ended ticket and what this call recorded: a pass
        whose seat already ended (a release sent again, or two at once) records nothing
        (0), so units are reported once however many releases race."""
        live = self.reports.ticket_state(room, token) in ("offered", "admitted")
        ticket = self.end(room, token, why="released", who=who)
        if not live or not sold:
            return ticket, 0
        return ticket, self.record_sale(room, token, sold, who)

    def record_sale(self, room: str, token: str, sold: int, who: str = "site") -> int:
        """What a site sold to the holder of ``token`` (a release's ``{"sold": n}``):
        units sold, as every other report of them (``record_sold``: the stock falls, a
        sell-out ends the line), counted once per ticket: 0 if it was counted before."""
        report = self.record_sold(room, sold, request_id=f"release:{public_id(token)}", who=who)
        return 0 if report.replay else sold

    def remove(self, room: str, token: str, who: str) -> Ticket:
        """An admin ends someone's seat or place."""
        return self.end(room, token, why="removed", who=who)

    def admit(
        self, room: str, count: int, request_id: str = "", override: bool = False, who: str = ""
    ) -> Admission:
        """An admin lets the next ``count`` in line in (see ``WaitingRooms.admit``)."""
        admission = self.rooms.admit(room, count, request_id, override, who)
        if admission.tokens and not admission.replay:
            self.announcer.changed(room)
        return admission

    def admit_one(self, room: str, token: str, override: bool, who: str) -> Admission:
        """An admin lets one person in line in, wherever they stand."""
        admission = self.rooms.admit(room, 1, override=override, who=who, token=token)
        if admission.tokens:
            self.announcer.changed(room)
        return admission

    def move(self, room: str, token: str, place: int, who: str) -> Ticket:
        """An admin moves someone in line to ``place`` (1 = the front)."""
        ticket = self.rooms.move(room, token, place, who)
        self.announcer.changed(room, ticket)
        return ticket

    def notice(self, room: str, text: str, who: str) -> str:
        """Sets the room's notice ('' clears it); open room pages show it at once and
        waiting pages at their next check-in. Returns the notice as stored."""
        printable = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
        text = " ".join(printable.split())[:MAX_NOTICE].rstrip()
        self.rooms.set_notice(room, text, who)
        self.announcer.publish(room, {"type": "notice", "text": text})
        return text

    # -- a seat's open room sockets ---------------------------------------------

    def open(self, room: str, token: str, hold: float) -> Opened:
        """A room socket of a seated ticket opened: its presence opens (the seat is held
        ``hold`` seconds without a beat; an offered seat is claimed) and its holder joins
        the room's chat (a reconnect keeps what they had seen). The admission was
        announced when it happened; this tells the room only of what upkeep changed."""
        ticket = self.rooms.presence(room, token, "open", hold=hold)
        self.announcer.saw(room, ticket)
        chat = self.chats.join(room_chat_id(room), public_id(token), self.rooms.clock())
        return Opened(ticket, chat)

    def beat(self, room: str, token: str, hold: float) -> Ticket:
        """An open socket is alive: the seat is held ``hold`` seconds more."""
        ticket = self.rooms.presence(room, token, "beat", hold=hold)
        self.announcer.saw(room, ticket)
        return ticket

    def close(self, room: str, token: str) -> Ticket:
        """A room socket closed: the seat is held for the room's grace from now (the
        holder stays in the chat until the seat ends), and the room is told."""
        ticket = self.rooms.presence(room, token, "close")
        self.announcer.changed(room, ticket)
        return ticket

    # -- upkeep -------------------------------------------------------------------

    def sweep(self, room: str) -> int:
        """The background upkeep of one room: lapses and dropouts, admissions from the
        line, the chat's seatless members, a waitlist's scheduled admissions and its
        draw; tells the room if anything changed."""
        handled = self.rooms.sweep(room)
        self.pace(room)
        handled += self.tidy_chat(room)
        handled += self.waitlists.sweep(room)
        handled += self.drop_turn(room)
        if handled:
            self.announcer.changed(room)
        return handled

    def pace(self, room: str) -> None:
        """Works out again, every ``HINT_EVERY`` seconds per room and process, the hint
        the room's check-in windows are granted from (``webapp.domain.windows``): from
        the measured pace, valid for ``HINT_VALID`` seconds, so windows fall back to
        ``dropout_seconds`` when no sweep keeps it."""
        now = self.reports.now()
        if now - self._paced.get(room, -math.inf) < windows.HINT_EVERY:
            return
        self._paced[room] = now
        if len(self._paced) > PACED_ROOMS:
            self._paced.clear()
        try:
            if self.reports.settings(room).kind != "live":
                return
        except RoomNotFound:
            return
        hint = windows.hint(self.reports.cache.rates(room, now))
        self.rooms.set_pace(room, "" if hint is None else hint.text(now + windows.HINT_VALID))

    # -- scheduled drops (webapp/domain/drops.py) --------------------------------

    def drop_turn(self, room: str) -> int:
        """A room with a schedule or stock: its drop's turn of the sweep (the seed, the
        start when due, the tickets a sell-out or the end clears). Others pay nothing
        but this process's cached settings."""
        try:
            settings = self.reports.settings(room)
        except RoomNotFound:
            return 0
        if settings.kind != "live" or not (has_schedule(settings) or settings.stock is not None):
            return 0
        tick = self.drops.tick(room)
        if tick.drawn > 0 or tick.ended > 0:
            self.reports.cache.forget(room)
            return tick.ended + max(tick.drawn, 0) + 1
        return 0

    def start_drop(self, room: str, who: str = "api") -> int:
        """An admin's "start now": the draw held at once, the room told. How many were
        drawn; -1 if the draw was held already (a second start does nothing)."""
        drawn = self.drops.start(room, who=who)
        if drawn >= 0:
            self.reports.cache.forget(room)
            self.announcer.changed(room)
        return drawn

    def record_sold(
        self, room: str, sold: int, request_id: str = "", who: str = "api"
    ) -> StockReport:
        """Units sold (an admin, a shop's API call, a gated site's release): counted
        once per ``request_id``; a sell-out ends every waiting ticket (``sold_out``)."""
        report = self.drops.record_sold(room, sold, request_id, who=who)
        self._stock_changed(room, report)
        return report

    def set_stock(self, room: str, left: int, who: str = "api") -> StockReport:
        """The stock left, set outright (raising it reopens a sold-out room)."""
        report = self.drops.set_left(room, left, who=who)
        self._stock_changed(room, report)
        return report

    def _stock_changed(self, room: str, report: StockReport) -> None:
        if report.replay:
            return
        if report.ended:
            self.drops.tick(room)  # the rest of a long line, in batches
        self.reports.cache.forget(room)
        self.announcer.changed(room)

    def tidy_chat(self, room: str) -> int:
        """Takes everyone without a seat out of the room's chat (the sweep calls this:
        seats also end by lapsing, inside the room scripts); returns how many."""
        chat_id = room_chat_id(room)
        members = set(self.chats.members(chat_id))
        if not members:
            return 0
        seated = {public_id(p.token) for p in self.reports.participants(room)}
        gone = members - seated
        for member in gone:
            self.chats.leave(chat_id, member)
        return len(gone)
