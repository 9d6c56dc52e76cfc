"""Waitlist rooms (setting ``kind`` = waitlist): people sign up with an email and wait,
days if need be, with no check-ins; only an admin or the schedule lets them in.

The rules live in ``webapp/lua/waitlist_lib.lua`` and the ``waitlist_*.lua`` scripts,
one script per change over one room's keys; batch admission is ``room_admit.lua``, as
for live rooms (``WaitingRooms.admit``). This module hashes addresses and device ids,
ranks a lottery's participants (HMAC-SHA256, which Lua lacks, by the published rules of
``webapp.domain.draw``) and parses replies; emails are checked by
``webapp.domain.emails``, and what it answers with is ``webapp.domain.entries``. No
Flask here.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from typing import Any

from webapp.domain.budgets import MailBudget
from webapp.domain.draw import DRAWN, draw_score
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
    Resent,
    SweepResult,
    WaitlistFigures,
)
from webapp.domain.refusals import (
    EntryNotFound,
    KnownAddress,
    NotALottery,
    NotAWaitlist,
    NotHeld,
    OldAddress,
    Reply,
    RoomNotFound,
    check,
)
from webapp.domain.rooms import WaitingRooms
from webapp.domain.tickets import clean_display_name, ticket_reply, valid_room_name
from webapp.redis.keys import WaitlistKeys
from webapp.redis.replies import record as _record
from webapp.redis.replies import text as _text

__all__ = [  # the waitlist's refusals and values, named here too
    "DrawRecord",
    "EmailRefused",
    "Entry",
    "EntryDetail",
    "EntryNotFound",
    "HeldReferral",
    "KnownAddress",
    "MailFigures",
    "NotALottery",
    "NotAWaitlist",
    "NotHeld",
    "OldAddress",
    "OutboxMessage",
    "Resent",
    "SweepResult",
    "WaitlistFigures",
    "Waitlists",
]

TREE_DEPTH = 3  # levels of referees shown below an entry
TREE_SHOWN = 300  # referees shown at most, breadth first
CHAIN_SHOWN = 64  # referrers followed up (a loop cannot form: referrals happen at join)
RANK_CHUNK = 2000  # participants ranked per script call during a draw
MAX_DEVICE = 200  # characters of a device id that count
CROCKFORD = str.maketrans("ILO", "110")  # referral codes are read aloud and retyped
LANGUAGES = ("en", "de", "es")  # an entry's emails are in one of these (kept at join)
RESEND_MOST = 5  # confirmation emails per entry at most, the sign-up's included
RESEND_GAP = 120  # seconds between two confirmation emails to one address, at least


class Waitlists:
    """Waitlist rooms. Thread-safe: share one per process. ``secret`` keys the hashes of
    addresses and device ids (``SECRET_KEY``), so that Redis never holds them raw and
    its contents alone cannot be reversed by trying every address."""

    def __init__(
        self, rooms: WaitingRooms, secret: str | bytes = b"", budget: MailBudget | None = None
    ) -> None:
        self.rooms = rooms
        self.client = rooms.client
        self.keys = rooms.keys
        self.scripts = rooms.scripts
        self.budget = budget or MailBudget(rooms.client, rooms.keys, rooms.clock)
        self._secret = secret.encode() if isinstance(secret, str) else secret

    def _room_keys(self, room: str) -> tuple[list[str], WaitlistKeys]:
        if not valid_room_name(room):
            raise RoomNotFound(f"no room named {room[:80]!r}")
        waitlist = self.keys.waitlist(room)
        return [*self.keys.room(room).all(), *waitlist.all()], waitlist

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

    # -- entries ---------------------------------------------------------------

    def join(
        self,
        room: str,
        name: object,
        email: object,
        referral_code: str = "",
        address: str = "",
        device: str = "",
        language: str = "",
    ) -> Entry:
        """Signs up to the waitlist, unconfirmed, at the back (in its ordering), and
        writes its confirmation email to the outbox. The same mailbox again gets the
        same entry back (EmailRefused for a bad or disposable address). ``address``: the
        joiner's IP address, ``device``: a device id; both are kept only hashed, to hold
        suspicious referral boosts for review. ``language``: one of LANGUAGES (else
        en), kept for the entry's emails. An address signed up already answers with
        its entry only to the device that made it; to any other nothing
        (KnownAddress: its owner is mailed their link), and a referral code is
        ignored. EmailRefused ("busy") if the mailbox had its emails for the hour."""
        display = clean_display_name(name)
        mail = normalise_email(email)
        self.budget.check(mail.key)
        code = "".join(str(referral_code or "").split()).upper()[:16].translate(CROCKFORD)
        ip, network = self._address_hashes(address)
        device_hash = self._hash("device", device[:MAX_DEVICE]) if device else ""
        for _attempt in range(3):
            reply = self._run(
                "waitlist_join",
                room,
                secrets.token_urlsafe(12),
                display,
                mail.address,
                mail.key,
                code,
                ip,
                network,
                device_hash,
                language if language in LANGUAGES else "",
            )
            if _text(reply[0]) != "taken":  # a fresh id clashed (never, in practice)
                break
        entry = self._entry(reply, room)
        mailed = _text(reply[21]) if len(reply) > 21 else ""
        if mailed:
            self.budget.spent(mail.key)
        if mailed == "link":
            raise KnownAddress("this email is signed up already; its entry's link was sent to it")
        return entry

    def position(self, room: str, entry: str) -> Entry:
        """The entry's standing: O(log n) whatever the waitlist's size."""
        return self._entry(self._run("waitlist_position", room, entry), room)

    def confirm(self, room: str, entry: str, tag: str = "") -> Entry:
        """The entry confirmed its email: it can now be admitted, and its referral, if
        any, counts (credited, held for review, or void for a loop). Idempotent. ``tag``:
        the address the link was sent to (``claims.address_tag``); OldAddress if the
        entry has corrected its address since."""
        return self._entry(self._run("waitlist_confirm", room, entry, tag), room)

    def resend_confirmation(self, room: str, entry: str, email: object = "") -> Resent:
        """Sends an unconfirmed entry its confirmation email again, to ``email`` if given
        (a corrected address: the old one's links stop working; EmailRefused for a bad
        one). Throttled on the entry (RESEND_MOST emails in all, RESEND_GAP seconds
        apart to one address): the outcome says whether it went, or why not."""
        mail = normalise_email(email) if email else None
        mailbox = (
            mail.key if mail else normalise_email(self.email_of(room, entry) or "x@x.invalid").key
        )
        self.budget.check(mailbox)  # EmailRefused ("busy"): that mailbox had its emails
        reply = self._run(
            "waitlist_resend",
            room,
            entry,
            mail.address if mail else "",
            mail.key if mail else "",
            RESEND_MOST,
            RESEND_GAP,
        )
        code = _text(reply[0])
        if code in ("no_room", "not_waitlist", "unknown"):
            check("unknown_entry" if code == "unknown" else code, Reply(room))
        if code == "sent":
            self.budget.spent(mailbox)
        return Resent(code, int(reply[1]))

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

    # -- review ----------------------------------------------------------------

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

    def release(self, room: str, referee: str, who: str) -> Entry:
        """Credits a held boost to the referrer (up to the cap); audited as ``who``."""
        return self._entry(self._run("waitlist_review", room, referee, "release", who), room)

    def void(self, room: str, referee: str, who: str) -> Entry:
        """Drops a held boost (the referrer gets nothing for it) or takes back a credited
        one (the referrer loses the points it gave, and moves at once); audited as
        ``who``. NotHeld for a leg that is pending or void already."""
        return self._entry(self._run("waitlist_review", room, referee, "void", who), room)

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
            code = "".join(query.split()).upper()[:16].translate(CROCKFORD)
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

    # -- the lottery -------------------------------------------------------------

    def draw(self, room: str, who: str = "api") -> DrawRecord:
        """Holds the lottery's draw now (or finishes one under way): reveals the seed
        and ranks everyone waiting by HMAC-SHA256(seed, entry id). Idempotent."""
        code, state, seed, _commitment = (_text(x) for x in self._run("waitlist_draw", room, who))
        check(code, Reply(room))
        if state == "ranking":
            self._rank(room, bytes.fromhex(seed), who)
        return self.draw_record(room)

    def _rank(self, room: str, seed: bytes, who: str) -> None:
        _, waitlist = self._room_keys(room)
        while True:
            unranked = self.client.zrangebyscore(
                waitlist.line, "-inf", f"({DRAWN}", start=0, num=RANK_CHUNK
            )
            pairs: list[str | int] = []
            for raw in unranked:
                entry = _text(raw)
                pairs += [entry, draw_score(seed, entry)]
            state, left = self._run("waitlist_rank", room, who, *pairs)
            if _text(state) != "ranking" or int(left) == 0:
                return

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

    # -- upkeep and the mailer's feed --------------------------------------------------

    def sweep(self, room: str) -> int:
        """The background sweep's turn (``sweep_turn``); returns how many entries changed
        state (admitted or lapsed), for the caller to tell the room."""
        turn = self.sweep_turn(room)
        return turn.admitted + turn.lapsed

    def sweep_turn(self, room: str) -> SweepResult:
        """One sweep turn (``waitlist_sweep.lua``): admitted entries not
        claimed by their deadline lapse (each told, and the next confirmed entry
        admitted in its place); the schedule's admissions (once per period); the
        "nearly in" notices; and the draw once ``draw_at`` has come (or one left half
        done). Each step's work per turn is bounded."""
        admitted, draw, lapsed, near = self._run("waitlist_sweep", room)
        if _text(draw) in ("start", "rank"):
            self.draw(room, who="schedule")
        return SweepResult(int(admitted), int(lapsed), int(near))

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

    # -- hashing -----------------------------------------------------------------

    def _hash(self, kind: str, value: str) -> str:
        return hmac.new(self._secret, f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()[:32]

    def _address_hashes(self, address: str) -> tuple[str, str]:
        """Hashes of the address and of its network (IPv4 /24, IPv6 /56): ('', '') if
        it is not an IP address."""
        try:
            ip = ipaddress.ip_address(address.strip())
        except ValueError:
            return "", ""
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        prefix = 24 if ip.version == 4 else 56
        network = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
        return self._hash("address", str(ip)), self._hash("network", str(network))
