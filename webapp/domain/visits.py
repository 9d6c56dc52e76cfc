"""Every change to who is where, with all its side effects, in one place.

Ending a ticket also takes its holder out of the room's chat and tells the room's open
pages; an admission tells the room; a notice reaches the room's sockets at once. The
pages, the JSON API, the admin panel and the background sweep all call these, so no
path forgets a step. The room and its chat live in different cluster slots, so the chat
step follows the room script rather than being part of it. No Flask here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from webapp.domain.chat import Chats, room_chat_id
from webapp.domain.lobby import Lobby, Standing
from webapp.domain.rooms import Admission, Ticket, WaitingRooms, public_id
from webapp.domain.settings import RoomSettings
from webapp.domain.waitlist import Waitlists

MAX_NOTICE = 280  # characters


RENAMED = "member.renamed"


def renamed_frame(token: str, name: str) -> dict[str, Any]:
    """Tells a room's sockets that the holder of ``token`` is now called ``name``."""
    return {"type": RENAMED, "id": public_id(token), "name": name}


class Publisher(Protocol):
    """Tells a room's open sockets in every process (``webapp.realtime.RoomRelay``)."""

    def changed(self, room: str) -> None: ...

    def publish(self, room: str, frame: Mapping[str, Any]) -> None: ...


class Visits:
    def __init__(
        self,
        rooms: WaitingRooms,
        chats: Chats,
        publisher: Publisher,
        lobby: Lobby | None = None,
        waitlists: Waitlists | None = None,
    ) -> None:
        self.rooms = rooms
        self.chats = chats
        self.publisher = publisher
        self.lobby = lobby or Lobby(rooms)
        self.waitlists = waitlists or Waitlists(rooms)

    # -- the room itself --------------------------------------------------------

    def configure(self, room: str, changes: Mapping[str, Any], who: str = "api") -> RoomSettings:
        """Creates the room or changes its settings (the script audits it): this process
        forgets its cached settings and the room's open pages are told, since a change
        (a capacity raise, a reopen) can let people in from the line."""
        settings = self.rooms.configure(room, changes, who=who)
        self.lobby.forget(room)
        self.publisher.changed(room)
        return settings

    def set_status(self, room: str, status: str, who: str = "api") -> RoomSettings:
        """Opens, pauses or closes the room (a change of settings like any other)."""
        return self.configure(room, {"status": status}, who=who)

    def delete(self, room: str) -> bool:
        """Removes the room with everything in it; its open pages are told. False if
        there was no such room."""
        deleted = self.rooms.delete(room)
        self.lobby.forget(room)
        if deleted:
            self.publisher.changed(room)
        return deleted

    # -- people -----------------------------------------------------------------

    def join(
        self, room: str, identity: str = "", name: str = "", email: str = "", lang: str = ""
    ) -> Standing:
        """A visitor asks in (or, with a live identity, checks in again). Whoever holds a
        seat now is shown in the room at once. ``email`` (normalised): the visitor is
        told there when a seat is offered to them."""
        standing = self.lobby.join(room, identity=identity, name=name, email=email, lang=lang)
        if standing.ticket.seated:
            self.publisher.changed(room)
        if standing.raw is not None and not standing.ticket.seated:
            guess = standing.raw
            low, high = max(guess.wait - guess.spread, 0.0), guess.wait + guess.spread
            self.rooms.predict(room, standing.ticket.token, guess.wait, low, high)
        return standing

    def enter(self, room: str, token: str, hold: float, claims: bool = False) -> Ticket:
        """A page of a seat's holder opens (or, without a socket, reloads): the seat is
        held ``hold`` seconds from now, so it lapses soon after the page closes, as a
        closed socket's does. ``claims``: the seat was offered and is taken now; the
        room is told."""
        ticket = self.rooms.presence(room, token, "beat", hold=hold)
        if claims:
            self.publisher.changed(room)
        return ticket

    def rename(self, room: str, token: str, name: str) -> bool:
        """A visitor's new display name on their ticket; the room hears of it, and the
        visitor's own open sockets (another tab) sign their next messages with it."""
        renamed = self.rooms.rename(room, token, name)
        if renamed:
            self.publisher.publish(room, renamed_frame(token, name))
            self.publisher.changed(room)
        return renamed

    def end(self, room: str, token: str, why: str = "left", who: str = "") -> Ticket:
        """Ends the ticket (its seat or its place), takes it out of the room's chat and
        tells the room. ``why`` removed and ``who``: an admin's doing, audited."""
        ticket = self.rooms.leave(room, token, why=why, who=who)
        self.chats.leave(room_chat_id(room), public_id(token))
        self.publisher.changed(room)
        return ticket

    def remove(self, room: str, token: str, who: str) -> Ticket:
        """An admin ends someone's seat or place."""
        return self.end(room, token, why="removed", who=who)

    def admit(
        self, room: str, count: int, request_id: str = "", override: bool = False, who: str = ""
    ) -> Admission:
        """An admin lets the next ``count`` in line in (see ``WaitingRooms.admit``)."""
        admission = self.rooms.admit(room, count, request_id, override, who)
        if admission.tokens and not admission.replay:
            self.publisher.changed(room)
        return admission

    def admit_one(self, room: str, token: str, override: bool, who: str) -> Admission:
        """An admin lets one person in line in, wherever they stand."""
        admission = self.rooms.admit(room, 1, override=override, who=who, token=token)
        if admission.tokens:
            self.publisher.changed(room)
        return admission

    def move(self, room: str, token: str, place: int, who: str) -> Ticket:
        """An admin moves someone in line to ``place`` (1 = the front)."""
        ticket = self.rooms.move(room, token, place, who)
        self.publisher.changed(room)
        return ticket

    def notice(self, room: str, text: str, who: str) -> str:
        """Sets the room's notice ('' clears it); open room pages show it at once and
        waiting pages at their next check-in. Returns the notice as stored."""
        printable = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
        text = " ".join(printable.split())[:MAX_NOTICE].rstrip()
        self.rooms.set_notice(room, text, who)
        self.publisher.publish(room, {"type": "notice", "text": text})
        return text

    def sweep(self, room: str) -> int:
        """The background upkeep of one room: lapses and dropouts, admissions from the
        line, the chat's seatless members, a waitlist's scheduled admissions and its
        draw; tells the room if anything changed."""
        handled = self.rooms.sweep(room)
        handled += self.tidy_chat(room)
        handled += self.waitlists.sweep(room)
        if handled:
            self.publisher.changed(room)
        return handled

    def tidy_chat(self, room: str) -> int:
        """Takes everyone without a seat out of the room's chat (the sweep calls this:
        seats also end by lapsing, inside the room scripts); returns how many."""
        chat_id = room_chat_id(room)
        members = set(self.chats.members(chat_id))
        if not members:
            return 0
        seated = {public_id(p.token) for p in self.rooms.participants(room)}
        gone = members - seated
        for member in gone:
            self.chats.leave(chat_id, member)
        return len(gone)
