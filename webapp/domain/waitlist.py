"""Waitlist rooms (setting ``kind`` = waitlist): people sign up with an email and wait,
days if need be, with no check-ins; only an admin or the schedule lets them in.

The rules live in ``webapp/lua/waitlist_lib.lua`` and the ``waitlist_*.lua`` scripts,
one script per change over one room's keys; batch admission is ``room_admit.lua``, as
for live rooms (``WaitingRooms.admit``). This module checks emails, hashes addresses,
works out the lottery's ranks (HMAC-SHA256, which Lua lacks) and parses replies. The
functions at the bottom (``priority_score``, ``verify_draw``) are the published rules,
in plain Python, for anyone to check the order against. No Flask here.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from email_validator import EmailNotValidError, validate_email

from webapp.domain.rooms import (
    InvalidInput,
    RoomError,
    RoomNotFound,
    Ticket,
    TicketNotFound,
    WaitingRooms,
    clean_display_name,
    valid_room_name,
)
from webapp.redis.keys import WaitlistKeys

TWO32 = 2**32
DRAWN = TWO32  # a drawn entry's score: DRAWN + its rank (52 bits)
MAX_POINTS = 1_000_000  # referral_cap's upper bound: below 2**21, so scores stay exact
RANK_CHUNK = 2000  # participants ranked per script call during a draw
MAX_DEVICE = 200  # characters of a device id that count
CROCKFORD = str.maketrans("ILO", "110")  # referral codes are read aloud and retyped
LANGUAGES = ("en", "de", "es")  # an entry's emails are in one of these (kept at join)
RESEND_MOST = 5  # confirmation emails per entry at most, the sign-up's included
RESEND_GAP = 120  # seconds between two confirmation emails to one address, at least

# Mail providers that ignore parts of the local part: (canonical domain, dots ignored,
# "+tag" ignored). Only these are folded; elsewhere a dot or a plus may be significant.
PROVIDERS = {
    "gmail.com": ("gmail.com", True, True),
    "googlemail.com": ("gmail.com", True, True),
    "outlook.com": ("outlook.com", False, True),
    "hotmail.com": ("hotmail.com", False, True),
    "live.com": ("live.com", False, True),
    "icloud.com": ("icloud.com", False, True),
    "me.com": ("me.com", False, True),
    "fastmail.com": ("fastmail.com", False, True),
    "proton.me": ("proton.me", False, True),
    "protonmail.com": ("protonmail.com", False, True),
}


class NotAWaitlist(RoomError):
    """The room is a live room: people join it on its page, not with an email."""


class EmailRefused(InvalidInput):
    """An email that cannot sign up: ``reason`` is syntax or disposable."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class EntryNotFound(TicketNotFound):
    pass


class NotALottery(RoomError):
    """Only a lottery waitlist holds a draw."""


class NotHeld(RoomError):
    """The referral is not held for review (never held, or released or voided already)."""


class OldAddress(InvalidInput):
    """A confirmation link sent to an address its entry corrected since: it confirms
    nothing (the link to the corrected address does)."""


class Resent(NamedTuple):
    """What became of a request for the confirmation email again."""

    outcome: str  # sent | confirmed | not_waiting | too_many | taken | too_soon
    wait: int  # too_soon: seconds until one may be sent

    @property
    def sent(self) -> bool:
        return self.outcome == "sent"


class EmailAddress(NamedTuple):
    address: str  # where mail goes: as written, its domain normalised
    key: str  # one per mailbox: lower case, provider aliases folded (the dedupe key)


class Referrals(NamedTuple):
    credited: int  # referees whose boost counted (possibly 0 points, at the cap)
    held: int  # referees whose boost waits for an admin's review
    pending: int  # referees who have not confirmed their email yet


class Entry(NamedTuple):
    """One entry of a waitlist, as a script saw it: a Ticket (token = the entry id,
    active = how many were admitted, support_code = the referral code) and more."""

    ticket: Ticket
    confirmed: bool  # the email is confirmed (double opt-in); never admitted before
    referral_code: str
    score: int  # referral points (the priority)
    referrals: Referrals
    ordering: str  # fifo | priority | lottery
    draw: str  # the lottery's state: '' | committed | ranking | drawn

    @property
    def id(self) -> str:
        return self.ticket.token

    @property
    def state(self) -> str:
        """waiting | admitted."""
        return self.ticket.state

    @property
    def position(self) -> int:
        """1 = next in line; 0 once admitted, or in a lottery before its draw."""
        return self.ticket.position


class DrawRecord(NamedTuple):
    """A lottery's draw, as anyone may see it: the seed only once the draw has begun."""

    state: str  # '' (no lottery) | committed | ranking | drawn
    commitment: str  # SHA-256 of the seed, hex: published when the lottery was set
    seed: str  # hex; '' until the draw
    committed_at: float
    started_at: float
    finished_at: float
    entries: int  # participants ranked so far


class HeldReferral(NamedTuple):
    """A referral boost waiting for an admin: release it (credit) or void it."""

    referee: str  # entry id
    referee_code: str
    referee_name: str
    referrer: str
    referrer_code: str
    referrer_name: str
    why: str  # network | device | address | velocity
    since: float


class Referee(NamedTuple):
    """One leg of a referral tree (the admin panel): an entry someone referred, what its
    leg gave its referrer, and its own referees (to a bounded depth)."""

    entry: str  # entry id
    name: str
    code: str  # its referral code (its support code)
    email: str
    state: str  # waiting | admitted | lapsed
    confirmed: bool
    leg: str  # pending | credited | held | void
    why: str  # held: network | device | address | velocity; void: loop | admin | gone
    points: int  # what the leg gave the referrer (credited; 0 at the cap)
    referees: tuple[Referee, ...]


class EntryDetail(NamedTuple):
    """One entry as an admin sees it: its standing, email, its referrers up the chain
    (nearest first) and its referral tree below it."""

    entry: Entry
    name: str
    email: str
    leg: str  # its own referral leg ('' if nobody referred it)
    why: str
    referrers: tuple[tuple[str, str, str], ...]  # (entry id, name, referral code)
    referees: tuple[Referee, ...]
    shown: int  # referees listed (at most TREE_SHOWN, to TREE_DEPTH levels)


TREE_DEPTH = 3  # levels of referees shown below an entry
TREE_SHOWN = 300  # referees shown at most, breadth first
CHAIN_SHOWN = 64  # referrers followed up (a loop cannot form: referrals happen at join)


class WaitlistFigures(NamedTuple):
    """A waitlist at a glance (the admin panel)."""

    entries: int  # everyone who signed up
    waiting: int  # in line, confirmed or not
    confirmed: int  # confirmed their email (admitted ones included)
    admitted: int  # admitted and not lapsed (claimed ones included)
    held: int  # referral boosts held for review
    claimed: int = 0  # admitted entries that used their claim link
    lapsed: int = 0  # admitted entries that did not claim in time


class MailFigures(NamedTuple):
    """A room's emails at a glance (the admin panel): notices in each state now."""

    sent: int
    unsent: int  # in the outbox, not sent nor given up on yet (retries included)
    retry: int  # a send failed; tried again after its backoff
    failed: int  # given up after the last try


class OutboxMessage(NamedTuple):
    """One message of a room's outbox (the mailer reads them in order)."""

    id: str  # the stream's id
    kind: str  # confirm | admitted | lapsed | near (NOTICE_KINDS)
    entry: str
    email: str
    name: str
    at: float
    lang: str = "en"  # the entry's language (en, de, es), for the mailer's templates
    until: float = 0  # admitted: the claim deadline the link carries
    nth: int = 1  # confirm: the 2nd or 3rd, sent when an unconfirmed entry signs up again


class SweepResult(NamedTuple):
    """What one sweep turn did to a waitlist."""

    admitted: int  # by the schedule, and in place of lapsed entries
    lapsed: int  # admitted entries not claimed by their deadline
    near: int  # entries told they are nearly in


class Waitlists:
    """Waitlist rooms. Thread-safe: share one per process. ``secret`` keys the hashes of
    addresses and device ids (``SECRET_KEY``), so that Redis never holds them raw and
    its contents alone cannot be reversed by trying every address."""

    def __init__(self, rooms: WaitingRooms, secret: str | bytes = b"") -> None:
        self.rooms = rooms
        self.client = rooms.client
        self.keys = rooms.keys
        self.scripts = rooms.scripts
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
        code = _text(reply[0])
        if code == "not_waitlist":
            raise NotAWaitlist(f"room {room!r} is not a waitlist")
        if code == "unknown":
            raise EntryNotFound("no such entry on this waitlist")
        if code == "not_held":
            raise NotHeld("this referral is not held for review")
        if code == "old_address":
            raise OldAddress("this link was sent to an address the entry has corrected since")
        if code == "no_room":
            raise RoomNotFound(f"no room named {room!r}")
        ticket = WaitingRooms._ticket([code, *reply[1:14]], room)  # the codes rooms share
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
        en), kept for the entry's emails."""
        display = clean_display_name(name)
        mail = normalise_email(email)
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
        return self._entry(reply, room)

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
            self._entry([code], room)  # raises what a position read would
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
        if code == "no_room":
            raise RoomNotFound(f"no room named {room!r}")
        if code == "not_waitlist":
            raise NotAWaitlist(f"room {room!r} is not a waitlist")
        if code == "not_lottery":
            raise NotALottery(f"room {room!r} is not a lottery")
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


# -- emails -------------------------------------------------------------------------


@cache
def disposable_domains() -> frozenset[str]:
    """The bundled list of disposable mail domains (``disposable_domains.txt``)."""
    text = resources.files("webapp.domain").joinpath("disposable_domains.txt").read_text()
    lines = (line.split("#", 1)[0].strip().lower() for line in text.splitlines())
    return frozenset(line for line in lines if line)


def is_disposable(domain: str) -> bool:
    """The domain or one of its parents is on the list (``x.mailinator.com`` too)."""
    parts = domain.lower().rstrip(".").split(".")
    listed = disposable_domains()
    return any(".".join(parts[i:]) in listed for i in range(len(parts) - 1))


def normalise_email(raw: object) -> EmailAddress:
    """The email checked by syntax (no DNS lookup) and against disposable domains, with
    its key: lower case, and for providers that ignore them, dots and +tags dropped and
    aliases folded (googlemail.com is gmail.com)."""
    if not isinstance(raw, str):
        raise EmailRefused("syntax", "email must be text")
    try:
        valid = validate_email(raw.strip(), check_deliverability=False)
    except EmailNotValidError as error:
        raise EmailRefused("syntax", f"that email address is not valid: {error}") from None
    domain = valid.ascii_domain.lower()
    if is_disposable(domain):
        raise EmailRefused("disposable", "please sign up with a lasting email address")
    local = valid.local_part.lower()
    rule = PROVIDERS.get(domain)
    if rule is not None:
        domain, no_dots, no_tags = rule
        folded = local.split("+", 1)[0] if no_tags else local
        folded = folded.replace(".", "") if no_dots else folded
        local = folded or local
    return EmailAddress(valid.normalized, f"{local}@{domain}")


# -- the published rules ------------------------------------------------------------


def priority_score(points: int, seq: int) -> int:
    """The sorted-set score of an entry in priority order: more points first, then the
    earlier join. With 0 <= points <= MAX_POINTS < 2**21 and 1 <= seq < 2**32, its size
    stays below 2**53, so a double holds it exactly: scores never round, and two
    entries never tie (seq is unique). waitlist_lib.lua computes the same."""
    return seq - points * TWO32


def draw_rank(seed: bytes, entry: str) -> int:
    """An entry's lottery rank: the first 52 bits of HMAC-SHA256(seed, entry id), as a
    big-endian integer (exact in a sorted-set score). Lower goes first."""
    digest = hmac.new(seed, entry.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 12


def draw_score(seed: bytes, entry: str) -> int:
    return DRAWN + draw_rank(seed, entry)


def commitment_of(seed_hex: str) -> str:
    """What was published before the draw: the SHA-256 of the seed's bytes, hex."""
    return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest()


def verify_draw(seed_hex: str, entry_ids: Iterable[str]) -> list[str]:
    """The draw's order, recomputed from the revealed seed and the participants: by rank,
    ties (about one draw in ten thousand, at a million entries) by entry id, bytewise,
    as Redis orders equal scores. Check ``commitment_of(seed_hex)`` too."""
    seed = bytes.fromhex(seed_hex)
    return sorted(entry_ids, key=lambda entry: (draw_rank(seed, entry), entry.encode()))


def _record(raw: Any) -> dict[str, Any]:
    record = json.loads(raw) if raw else {}
    return record if isinstance(record, dict) else {}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
