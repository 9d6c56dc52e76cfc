"""What a waitlist room's entries look like from outside: an entry's standing, the
room's figures, the referrals held for review, an entry as an admin looks it up (its
referrers and referral tree), the lottery's record and participants, and the mailer's
figures and outbox. Reads only, except ``position``'s script, which changes nothing
but upkeep. ``Waitlists`` (``webapp.domain.waitlist``) adds the changes. No Flask here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from webapp.domain.emails import EmailRefused, normalise_email
from webapp.domain.entries import (
    DrawRecord,
    Entry,
    EntryDetail,
    HeldReferral,
    MailFigures,
    OutboxMessage,
    Referee,
    Referrals,
    WaitlistFigures,
)
from webapp.domain.refusals import RoomNotFound
from webapp.domain.tickets import ticket_reply, valid_room_name
from webapp.redis.keys import WaitlistKeys
from webapp.redis.replies import record as _record
from webapp.redis.replies import text as _text

if TYPE_CHECKING:
    from webapp.domain.rooms import WaitingRooms
    from webapp.redis.keys import Keys
    from webapp.redis.scripts import Scripts

TREE_DEPTH = 3  # levels of referees shown below an entry
TREE_SHOWN = 300  # referees shown at most, breadth first
CHAIN_SHOWN = 64  # referrers followed up (a loop cannot form: referrals happen at join)
CROCKFORD = str.maketrans("ILO", "110")  # referral codes are read aloud and retyped


def clean_referral_code(raw: object) -> str:
    """A referral code as typed, the way codes are kept: no spaces, upper case, at most
    16 characters, I L O read as 1 1 0 ('' for none)."""
    return "".join(str(raw or "").split()).upper()[:16].translate(CROCKFORD)


class WaitlistReads:
    """The reads of ``Waitlists``, which sets these attributes."""

    rooms: WaitingRooms
    client: Any
    keys: Keys
    scripts: Scripts

    def _room_keys(self, room: str) -> tuple[dict[str, str], WaitlistKeys]:
        if not valid_room_name(room):
            raise RoomNotFound(f"no room named {room[:80]!r}")
        waitlist = self.keys.waitlist(room)
        return {**self.keys.room(room).named(), **waitlist.named()}, waitlist

    def _run(self, script: str, room: str, *args: Any) -> Any:
        keys, _ = self._room_keys(room)
        return self.scripts[script](keys=keys, args=[*self.rooms.argv_header(), *args])

    def _entry(self, reply: list[Any], room: str) -> Entry:
        ticket = ticket_reply(reply[:14], room, unknown="unknown_entry")
        return Entry(
            ticket=ticket,
            confirmed=int(reply[14]) == 1,
            referral_code=_text(reply[13]),
            score=int(reply[15]),
            referrals=Referrals(int(reply[16]), int(reply[17]), int(reply[18])),
            ordering=_text(reply[19]),
            draw=_text(reply[20]),
        )

    def position(self, room: str, entry: str) -> Entry:
        """The entry's standing: O(log n) whatever the waitlist's size."""
        return self._entry(self._run("waitlist_position", room, entry), room)

    def email_of(self, room: str, entry: str) -> str:
        """The address an entry's emails go to ('' for no such entry)."""
        _, waitlist = self._room_keys(room)
        return str(_record(self.client.hget(waitlist.entries, entry)).get("em", ""))

    def figures(self, room: str) -> WaitlistFigures:
        """The waitlist's counts, in one round trip: O(1) each."""
        _, waitlist = self._room_keys(room)
        pipe = self.client.pipeline(transaction=False)
        pipe.hlen(waitlist.entries)
        for key in (waitlist.line, waitlist.ready, waitlist.admitted, waitlist.held):
            pipe.zcard(key)
        pipe.hlen(self.keys.claims(room))
        pipe.hget(self.keys.room(room).stats, "count:lapsed")  # waitlist_sweep.lua counts
        entries, waiting, ready, admitted, held, claimed, lapsed = (
            int(n or 0) for n in pipe.execute()
        )
        return WaitlistFigures(entries, waiting, ready + admitted, admitted, held, claimed, lapsed)

    def held(self, room: str, count: int = 100) -> list[HeldReferral]:
        """Referral boosts held for review, oldest first."""
        _, waitlist = self._room_keys(room)
        pairs = self.client.zrange(waitlist.held, 0, count - 1, withscores=True)
        if not pairs:
            return []
        referees = [_text(p[0]) for p in pairs]
        records = [_record(raw) for raw in self.client.hmget(waitlist.entries, referees)]
        referrer_ids = [str(r.get("by", "")) for r in records]
        referrers = [_record(raw) for raw in self.client.hmget(waitlist.entries, referrer_ids)]
        return [
            HeldReferral(
                referee=referee,
                referee_code=str(x.get("rc", "")),
                referee_name=str(x.get("n", "")),
                referrer=referrer_id,
                referrer_code=str(r.get("rc", "")),
                referrer_name=str(r.get("n", "")),
                why=str(x.get("rw", "")),
                since=float(since),
            )
            for referee, x, referrer_id, r, (_, since) in zip(
                referees, records, referrer_ids, referrers, pairs, strict=True
            )
        ]

    # -- an entry, as an admin looks it up -----------------------------------------

    def find(self, room: str, query: str) -> str | None:
        """The entry id with this email (as normalised at join: aliases find it too) or
        this referral code; None if there is none."""
        _, waitlist = self._room_keys(room)
        query = query.strip()
        if "@" in query:
            try:
                key = normalise_email(query).key
            except EmailRefused:
                return None
            found = self.client.hget(waitlist.emails, key)
        else:
            code = clean_referral_code(query)
            found = self.client.hget(waitlist.codes, code) if code else None
        return _text(found) if found else None

    def detail(self, room: str, entry: str) -> EntryDetail:
        """The entry's standing, its referrers up the chain and its referral tree, read
        without a script (nothing changes); EntryNotFound if it is not on the waitlist."""
        standing = self.position(room, entry)
        _, waitlist = self._room_keys(room)
        record = _record(self.client.hget(waitlist.entries, entry))
        chain: list[tuple[str, str, str]] = []
        seen, up = {entry}, str(record.get("by") or "")
        while up and up not in seen and len(chain) < CHAIN_SHOWN:
            seen.add(up)
            above = _record(self.client.hget(waitlist.entries, up))
            chain.append((up, str(above.get("n", "")), str(above.get("rc", ""))))
            up = str(above.get("by") or "")
        referees, shown = self._referees(waitlist, entry)
        return EntryDetail(
            entry=standing,
            name=str(record.get("n", "")),
            email=str(record.get("em", "")),
            leg=str(record.get("rs", "")),
            why=str(record.get("rw", "")),
            referrers=tuple(chain),
            referees=referees,
            shown=shown,
        )

    def _referees(self, waitlist: WaitlistKeys, root: str) -> tuple[tuple[Referee, ...], int]:
        """The tree below ``root``, breadth first, TREE_DEPTH levels, TREE_SHOWN legs."""
        children: dict[str, list[str]] = {}
        records: dict[str, dict[str, Any]] = {}
        level, shown = [root], 0
        for _depth in range(TREE_DEPTH):
            below: list[str] = []
            for parent in level:
                room_left = TREE_SHOWN - shown
                if room_left <= 0:
                    break
                members = self.client.zrangebylex(
                    waitlist.referees, f"[{parent}:", f"({parent};", start=0, num=room_left
                )
                ids = [_text(m).split(":", 1)[1] for m in members]
                if ids:
                    raws = self.client.hmget(waitlist.entries, ids)
                    for child, raw in zip(ids, raws, strict=True):
                        records[child] = _record(raw)
                    ids.sort(key=lambda child: int(records[child].get("seq") or 0))
                children[parent] = ids  # in join order
                below.extend(ids)
                shown += len(ids)
            level = below

        def legs(parent: str) -> tuple[Referee, ...]:
            return tuple(
                Referee(
                    entry=child,
                    name=str(x.get("n", "")),
                    code=str(x.get("rc", "")),
                    email=str(x.get("em", "")),
                    state=str(x.get("st", "")),
                    confirmed=bool(x.get("ok")),
                    leg=str(x.get("rs", "")),
                    why=str(x.get("rw", "")),
                    points=int(x.get("rp") or 0),
                    referees=legs(child),
                )
                for child in children.get(parent, [])
                for x in (records[child],)
            )

        return legs(root), shown

    def draw_record(self, room: str) -> DrawRecord:
        _, waitlist = self._room_keys(room)
        fields = ("state", "commitment", "seed", "committed_at", "started_at", "finished_at")
        state, commitment, seed, committed, started, finished = (
            _text(v) if v is not None else "" for v in self.client.hmget(waitlist.meta, fields)
        )
        return DrawRecord(
            state=state,
            commitment=commitment,
            seed=seed if state in ("ranking", "drawn") else "",
            committed_at=float(committed or 0),
            started_at=float(started or 0),
            finished_at=float(finished or 0),
            entries=int(self.client.llen(waitlist.drawn)),
        )

    def draw_entries(self, room: str, offset: int = 0, count: int = 10_000) -> list[str]:
        """The draw's participants (a page of them): with the seed, all that is needed
        to recompute the draw (``verify_draw``)."""
        _, waitlist = self._room_keys(room)
        return [_text(x) for x in self.client.lrange(waitlist.drawn, offset, offset + count - 1)]

    def mail_figures(self, room: str) -> MailFigures:
        """The mailer's counts (kept by mail_claim.lua and mail_done.lua in the room's
        delivery hash) and the outbox's length: O(1)."""
        _, waitlist = self._room_keys(room)
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(self.keys.deliveries(room), "#sent", "#retry", "#failed")
        pipe.xlen(waitlist.outbox)
        (sent, retry, failed), messages = pipe.execute()
        sent, retry, failed = (int(n or 0) for n in (sent, retry, failed))
        return MailFigures(sent, max(int(messages) - sent - failed, 0), retry, failed)

    def outbox(self, room: str, after: str = "0", count: int = 100) -> list[OutboxMessage]:
        """Messages of the room's outbox after the stream id ``after``, oldest first."""
        _, waitlist = self._room_keys(room)
        out = []
        for message_id, fields in self.client.xrange(waitlist.outbox, f"({after}", count=count):
            f = {_text(k): _text(v) for k, v in fields.items()}
            out.append(
                OutboxMessage(
                    id=_text(message_id),
                    kind=f["kind"],
                    entry=f["entry"],
                    email=f["email"],
                    name=f["name"],
                    at=float(f["at"]),
                    lang=f.get("lang", "en"),
                    until=float(f.get("until") or 0),
                    nth=int(f.get("nth") or 1),
                )
            )
        return out
