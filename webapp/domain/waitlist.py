"""Waitlist rooms (setting ``kind`` = waitlist): people sign up with an email and wait,
days if need be, with no check-ins; only an admin or the schedule lets them in. This module
holds the changes; the reads are ``webapp.domain.waitlist_reads``.

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
    check,
)
from webapp.domain.rooms import WaitingRooms
from webapp.domain.tickets import clean_display_name
from webapp.domain.waitlist_reads import WaitlistReads, clean_referral_code
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

RANK_CHUNK = 2000  # participants ranked per script call during a draw
MAX_DEVICE = 200  # characters of a device id that count
# An entry's emails speak one of these (kept at join); webapp.web.i18n.LANGUAGES names them.
LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "nl", "pl", "ja", "ar")
RESEND_MOST = 5  # confirmation emails per entry at most, the sign-up's included
RESEND_GAP = 120  # seconds between two confirmation emails to one address, at least


class Waitlists(WaitlistReads):
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
        code = clean_referral_code(referral_code)
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
        stored = None if mail else self.email_of(room, entry)
        # No mailbox: no such entry (the script says so, unknown_entry), nothing to budget
        mailbox = mail.key if mail else normalise_email(stored).key if stored else None
        if mailbox is not None:
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
        if code == "sent" and mailbox is not None:
            self.budget.spent(mailbox)
        return Resent(code, int(reply[1]))

    # -- review ----------------------------------------------------------------

    def release(self, room: str, referee: str, who: str) -> Entry:
        """Credits a held boost to the referrer (up to the cap); audited as ``who``."""
        return self._entry(self._run("waitlist_review", room, referee, "release", who), room)

    def void(self, room: str, referee: str, who: str) -> Entry:
        """Drops a held boost (the referrer gets nothing for it) or takes back a credited
        one (the referrer loses the points it gave, and moves at once); audited as
        ``who``. NotHeld for a leg that is pending or void already."""
        return self._entry(self._run("waitlist_review", room, referee, "void", who), room)

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
