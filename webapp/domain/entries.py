"""What a waitlist entry and a waitlist look like to their readers: an entry's standing
and referrals, the lottery's draw, a referral held for review, an entry's referral tree
as an admin sees it, a waitlist's and its mail's figures, an outbox message, what a
sweep turn did. Values only: ``webapp.domain.waitlist`` makes them. No Flask here."""

from __future__ import annotations

from typing import NamedTuple

from webapp.domain.tickets import Ticket


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


class WaitlistFigures(NamedTuple):
    """A waitlist at a glance (the admin panel)."""

    entries: int  # everyone who signed up
    waiting: int  # in line, confirmed or not
    confirmed: int  # confirmed their email (admitted ones included)
    admitted: int  # admitted and not lapsed (claimed ones included)
    held: int  # referral boosts held for review
    claimed: int = 0  # admitted entries that used their claim link
    lapsed: int = 0  # admitted entries that did not claim in time


class Resent(NamedTuple):
    """What became of a request for the confirmation email again."""

    outcome: str  # sent | confirmed | not_waiting | too_many | taken | too_soon
    wait: int  # too_soon: seconds until one may be sent

    @property
    def sent(self) -> bool:
        return self.outcome == "sent"


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
    lang: str = "en"  # the entry's language (waitlist.LANGUAGES), for the mailer's templates
    until: float = 0  # admitted: the claim deadline the link carries
    nth: int = 1  # confirm: the 2nd or 3rd, sent when an unconfirmed entry signs up again


class SweepResult(NamedTuple):
    """What one sweep turn did to a waitlist."""

    admitted: int  # by the schedule, and in place of lapsed entries
    lapsed: int  # admitted entries not claimed by their deadline
    near: int  # entries told they are nearly in
