"""A room's settings, described once: ``SETTINGS`` is the table that validation, the
defaults (``RoomSettings`` reads them from it), the Redis form (the room's settings
hash), the API and the admin panel's form (its groups, the kinds of room each setting
applies to, units and the labels of choices) all read. No Flask here."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from webapp.domain import bypass, page_template

RoomStatus = Literal["open", "paused", "closed"]
STATUSES: tuple[RoomStatus, ...] = ("open", "paused", "closed")
AdmissionMode = Literal["auto", "manual"]
RoomKind = Literal["live", "waitlist"]
KINDS: tuple[RoomKind, ...] = ("live", "waitlist")
Ordering = Literal["fifo", "priority", "lottery"]
Challenge = Literal["off", "on", "auto"]
QueueingMethod = Literal["fifo", "random", "passthrough", "reject"]
Identity = Literal["off", "optional", "required"]
IDENTITY_SECRET_MIN = 32  # characters of an HS256 secret (RFC 7518: a key of 256 bits)


def hs256_secret_rule(secret: str) -> str | None:
    if len(secret) < IDENTITY_SECRET_MIN:
        return f"must be at least {IDENTITY_SECRET_MIN} characters"
    return None


def ed25519_public_key_rule(pem: str) -> str | None:
    try:
        key = load_pem_public_key(pem.encode())
    except (ValueError, TypeError):
        return "must be a PEM public key"
    return None if isinstance(key, Ed25519PublicKey) else "must be an Ed25519 key"


# An origin images of a room's own page may come from (page_asset_origins): a scheme
# and a host (a leading "*." for its subdomains) and a port, nothing more, so it is a
# Content-Security-Policy source as it stands
ORIGIN = re.compile(
    r"https?://(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?"
)
MAX_ORIGINS = 20


def origins_in(text: str) -> list[str]:
    """The origins of a page_asset_origins value (one per line or space), lowercase."""
    return [word.lower().rstrip("/") for word in text.split()]


def origins_rule(text: str) -> str | None:
    origins = origins_in(text)
    if len(origins) > MAX_ORIGINS:
        return f"must name at most {MAX_ORIGINS} origins"
    for origin in origins:
        if not ORIGIN.fullmatch(origin):
            return (
                f"must be origins such as https://cdn.example.com, one per line "
                f"(not {origin[:60]!r}: a scheme and a host, no path)"
            )
    return None


# The proof of work's default largest counter (a try: one PBKDF2 key derivation,
# webapp/domain/challenge.py), measured by bench/challenge_cost.py (docs/operations.md,
# "The proof of work's cost")
CHALLENGE_COST = 5_000
LIVE: tuple[RoomKind, ...] = ("live",)
WAITLIST: tuple[RoomKind, ...] = ("waitlist",)

# Free-text settings: no control characters but the newline; links are http(s) with a host.
TEXT_PATTERN = "^[^\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f]*$"
# A page template (markup): tabs and line breaks too
MARKUP_PATTERN = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
URL_PATTERN = (
    "^(https?://[^\\u0000-\\u0020\\u007f-\\u009f/?#\\\\]+[^\\u0000-\\u0020\\u007f-\\u009f]*)?$"
)
# Seconds in each unit a duration can be typed in on the admin form (the API takes the
# setting's own unit, named in its name: seconds, or minutes for admit_every_minutes).
DURATIONS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
# The admin form's groups of settings, in order: (group, heading).
GROUPS = (
    ("room", "The room"),
    ("capacity", "Capacity and timing"),
    ("presence", "Presence"),
    ("estimates", "Estimates"),
    ("site", "Protected site"),
    ("waitlist", "The waitlist"),
    ("referrals", "Referrals"),
    ("drop", "Scheduled drop"),
    ("page", "The waiting page"),
)


class InvalidSetting(ValueError):
    """A setting that is unknown or out of bounds; the message says which and why."""


@dataclass(frozen=True)
class Setting:
    name: str
    label: str
    help: str
    default: int | str | None
    low: int = 0
    high: int = 0
    nullable: bool = False  # None (empty) allowed; ``blank`` says what it means
    choices: tuple[tuple[str, str], ...] = ()  # a text setting: one of these (value, label)
    unit: str = ""  # of the number as stored and in the API
    text: int = 0  # a free-text setting of at most this many characters ('' when unset)
    url: bool = False  # a free-text setting that is empty or an http(s) address
    group: str = "room"  # where the admin form shows it (GROUPS)
    kinds: tuple[RoomKind, ...] = KINDS  # the kinds of room it applies to
    units: tuple[str, ...] = ()  # a duration: the units the admin form offers (DURATIONS)
    moment: bool = False  # a point in time (Unix seconds): a date and time on the form
    blank: str = ""  # what None means, in words ("no limit")
    iso: bool = False  # a moment the API also takes as ISO 8601 and answers in it (UTC)
    flag: bool = False  # 0 or 1; the API also takes false or true
    markup: bool = False  # a free text that is a page template: tabs and CR LF allowed
    # a free text's own rule beyond its pattern: the problem in words, or None if none
    rule: Callable[[str], str | None] | None = None

    @property
    def values(self) -> tuple[str, ...]:
        """The allowed values of a choice."""
        return tuple(value for value, _ in self.choices)

    @property
    def pattern(self) -> str:
        """What a free text must match (the OpenAPI document's pattern too)."""
        return URL_PATTERN if self.url else MARKUP_PATTERN if self.markup else TEXT_PATTERN

    def choice_label(self, value: str) -> str:
        return dict(self.choices).get(value, value)

    def check(self, value: Any) -> int | str | None:
        """The value if it is allowed (JSON types: int, str, None), else InvalidSetting."""
        if self.choices:
            if value not in self.values:
                raise InvalidSetting(f"{self.name} must be one of {', '.join(self.values)}")
            return str(value)
        if self.text:
            return self.check_text(value)
        if value is None and self.nullable:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 5.0 is the number 5 in JSON (and in JSON Schema)
        if self.flag and isinstance(value, bool):
            value = int(value)
        if self.iso and isinstance(value, str):
            value = parse_moment(self.name, value)
        if isinstance(value, bool) or not isinstance(value, int):
            kind = "an integer or null" if self.nullable else "an integer"
            raise InvalidSetting(f"{self.name} must be {kind}")
        if not self.low <= value <= self.high:
            raise InvalidSetting(f"{self.name} must be between {self.low} and {self.high}")
        return value

    def check_text(self, value: Any) -> str:
        """A free text: at most ``text`` characters, no control characters but newlines,
        trimmed; a link must be http(s). The same rules as the OpenAPI document's (its
        type, TEXT_PATTERN, URL_PATTERN), so the two cannot disagree: "" is the empty
        text, and null is no string (the integers' null has no text twin)."""
        if not isinstance(value, str):
            raise InvalidSetting(f'{self.name} must be a string ("" for none)')
        if self.markup:
            value = value.replace("\r\n", "\n")
        if len(value) > self.text:
            raise InvalidSetting(f"{self.name} must be at most {self.text} characters")
        if not re.fullmatch(self.pattern, value):
            if self.url:
                raise InvalidSetting(f"{self.name} must be an http:// or https:// address")
            raise InvalidSetting(f"{self.name} must be plain text")
        stripped: str = value.strip()
        problem = self.rule(stripped) if self.rule is not None and stripped else None
        if problem:
            raise InvalidSetting(f"{self.name} {problem}")
        return stripped

    def from_text(self, text: str) -> int | str | None:
        """A value as stored in Redis (or typed in the setting's own unit): checked like
        ``check``."""
        if self.text:  # a browser sends a textarea's line breaks as CR LF
            return self.check_text(text.replace("\r\n", "\n"))
        text = text.strip()
        if self.choices:
            return self.check(text)
        if not text:
            return self.check(None)
        try:
            number = int(text)
        except ValueError:
            raise InvalidSetting(f"{self.label} must be a whole number") from None
        return self.check(number)

    def to_text(self, value: Any) -> str:
        return "" if value is None else str(value)


STATUS_CHOICES = (("open", "Open"), ("paused", "Paused"), ("closed", "Closed"))
SETTINGS: tuple[Setting, ...] = (
    Setting("title", "Title", "The room's name as visitors see it (the address stays "
            "the same). Empty: the address.",
            "", text=80),
    Setting("description", "Description", "A line or two shown under the title on the "
            "lobby and every page of the room.",
            "", text=500),
    Setting("capacity", "Capacity", "How many people can be in the room at once: its "
            "seats.",
            10, 1, 1_000_000, unit="seats", group="capacity", kinds=LIVE),
    Setting("dropout_seconds", "Check-in window", "A visitor in line who does not check "
            "in for this long drops out (the waiting page checks in for them).",
            30, 5, 3600, unit="seconds", group="presence", kinds=LIVE,
            units=("seconds", "minutes")),
    Setting("max_checkin_seconds", "Longest check-in window", "Far back in a long line "
            "a visitor may go this long between check-ins (the further from the head, the "
            "longer, up to this); near the head the check-in window applies.",
            300, 5, 3600, unit="seconds", group="presence", kinds=LIVE,
            units=("seconds", "minutes")),
    Setting("grace_seconds", "Grace period", "How long someone in the room keeps the "
            "seat after the page closes or the connection drops.",
            15, 1, 3600, unit="seconds", group="presence", kinds=LIVE,
            units=("seconds", "minutes")),
    Setting("session_seconds", "Seat without a page", "How long a seat is held without "
            "an open room page (an API client's seat, renewed by each check-in).",
            600, 10, 86400, unit="seconds", group="presence", kinds=LIVE,
            units=("seconds", "minutes", "hours")),
    # An open page takes its offer at once; this is for someone who gave an email and
    # closed every page: the email's link takes the seat while the offer lasts.
    Setting("email_claim_seconds", "Time to take an emailed seat", "A seat offered to "
            "someone who gave an email is held this long, so they can take it with the "
            "email's link after closing their pages (an open page takes its seat at once). "
            "Never shorter than the check-in window.",
            180, 5, 3600, unit="seconds", group="presence", kinds=LIVE,
            units=("seconds", "minutes")),
    # A default, so that the first visitors of a new room see a wait (labelled as a first
    # estimate) rather than none until five stays are measured (docs/estimates.md).
    Setting("typical_stay_seconds", "Typical stay", "How long a person usually holds a "
            "seat. Until five stays are measured, wait estimates come from it, with the "
            "longer hold of seats offered to people who gave an email (visitors see them "
            "labelled as a first estimate). 15 minutes unless you set "
            "it, a usual visit to a live chat, so that a new room's first visitors are "
            "told something rather than nothing. Empty: no estimate until stays are "
            "measured.",
            900, 1, 7 * 86400, nullable=True, unit="seconds", group="estimates",
            kinds=LIVE, units=("minutes", "hours"), blank="none"),
    Setting("opens_at", "Opens at", "When a paused or closed room opens again, shown to "
            "visitors. Empty: not announced.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time", moment=True,
            blank="not announced"),
    # Scheduled drops (issue 24, webapp/domain/drops.py): a pre-queue, a start drawn in
    # an order anyone can verify, an end, and the stock the line is honest about.
    Setting("prequeue_at", "Pre-queue opens", "From this time people can join the "
            "pre-queue: nobody is let in, and at the start everyone in it is placed at the "
            "head of the line in the order of a draw anyone can verify. Before it the room's "
            "page counts down. Empty: no pre-queue.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time", group="drop",
            kinds=LIVE, moment=True, iso=True, blank="no pre-queue"),
    Setting("starts_at", "Starts at", "When the sale starts: the pre-queue is drawn and "
            "people are let in. Before it (and before the pre-queue) nobody can join. "
            "Empty: no scheduled start.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time", group="drop",
            kinds=LIVE, moment=True, iso=True, blank="no scheduled start"),
    Setting("ends_at", "Ends at", "When the room closes to new joiners; people already in "
            "line are still served unless the setting below ends their places. Empty: no "
            "end.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time", group="drop",
            kinds=LIVE, moment=True, iso=True, blank="no end"),
    Setting("ends_at_clears_line", "End clears the line", "On (1 in the API): at the end "
            "time everyone still waiting (or in the pre-queue) loses their place, told the "
            "event has ended. Off (0): they are still served.",
            0, 0, 1, group="drop", kinds=LIVE, flag=True),
    Setting("stock", "Stock left", "How many items are left to sell. Waiting pages warn "
            "when the people ahead are likely to buy them all; at 0 the room is sold out "
            "and everyone waiting is told. Empty: not tracked.",
            None, 0, 1_000_000_000, nullable=True, unit="items", group="drop", kinds=LIVE,
            blank="not tracked"),
    Setting("prequeue_per_address", "Pre-queue entries per address", "The most entries "
            "one address makes in a drop's pre-queue over its whole length, whatever the "
            "joins a minute (a lottery place is not for sale). A customer the site vouches "
            "for (Identity) holds one place anyway.",
            5, 1, 1_000_000, unit="entries", group="drop", kinds=LIVE),
    Setting("prequeue_per_network", "Pre-queue entries per network", "The same for one "
            "network (a /24 of IPv4, a /64 of IPv6).",
            50, 1, 10_000_000, unit="entries", group="drop", kinds=LIVE),
    Setting("max_wait_seconds", "Longest wait", "Refuse new joiners whose estimated wait "
            "is longer than this. Empty: no limit.",
            None, 1, 7 * 86400, nullable=True, unit="seconds", group="capacity",
            kinds=LIVE, units=("minutes", "hours", "days"), blank="no limit"),
    Setting("max_line_length", "Longest line", "Refuse new joiners when this many are "
            "waiting. Empty: no limit.",
            None, 1, 10_000_000, nullable=True, unit="people", blank="no limit"),
    # Site rooms (issue 23): a room with a site_url protects that site through the gate.
    Setting("site_url", "Protected site", "The address of the site this room protects "
            "(its proxy asks the gate, docs/gate.md): people let in get a pass for it "
            "instead of the room's chat. Empty: the room is a chat room.",
            "", text=500, url=True, group="site", kinds=LIVE),
    Setting("pass_renew_seconds", "Pass renewal", "How often the gate checks a site "
            "visitor's seat and renews it (a pass lives twice this long).",
            30, 5, 3600, unit="seconds", group="site", kinds=LIVE,
            units=("seconds", "minutes")),
    # Paths the gate lets through without a pass (issue 30, webapp/domain/bypass.py)
    Setting("bypass_paths", "Paths without a pass", "Paths of the site the gate lets "
            "through without a pass, one per line: /robots.txt, /healthz; * stands for any "
            "characters (/static/* is everything under /static/). Empty: none.",
            "", text=2000, group="site", kinds=LIVE, rule=bypass.problem),
    # One place per person (issue 29): the site signs its customer in a token
    # (webapp/domain/identity.py); a room holds one place per customer (the token's sub)
    Setting("identity", "Identity from the site", "Off: anyone joins. Optional: a join "
            "that carries the site's signed token for its customer holds the one place of "
            "that customer, from any device. Required: only such joins (people are sent "
            "to come from the site).",
            "off", choices=(("off", "Off"), ("optional", "Optional"), ("required", "Required")),
            group="site", kinds=LIVE),
    Setting("identity_secret", "Identity secret", "The shared secret the site signs its "
            "customers' tokens with (HS256), at least 32 characters. Empty: none.",
            "", text=200, group="site", kinds=LIVE, rule=hs256_secret_rule),
    Setting("identity_public_key", "Identity public key", "The Ed25519 public key (PEM) "
            "the site signs its customers' tokens with (EdDSA). Empty: none.",
            "", text=1000, group="site", kinds=LIVE, rule=ed25519_public_key_rule),
    # The operator's own page (issue 30): webapp/domain/page_template.py, docs/templates.md
    Setting("page_template", "Page template", "The waiting page's body as a Mustache "
            "template, with Cloudflare Waiting Room's variables (listed beside it) and "
            "the visitor's live figures, refreshed at every check-in. Scripts never run "
            "in it. At most 64 KB. Empty: the usual page.",
            "", text=page_template.MAX_BYTES, group="page", kinds=LIVE, markup=True,
            rule=page_template.problem),
    Setting("page_asset_origins", "Image origins", "Origins the page template's images "
            "may come from (https://cdn.example.com), one per line; the room's pages "
            "allow them and no others. Empty: images from this server only.",
            "", text=2000, group="page", kinds=LIVE, rule=origins_rule),
    Setting("admit_per_minute", "Admissions per minute", "Let at most this many people "
            "in per minute (each clock minute), whatever the free seats: for a site whose "
            "load comes from arrivals. Empty: no limit.",
            None, 1, 1_000_000, nullable=True, unit="people", group="capacity",
            kinds=LIVE, blank="no limit"),
    Setting("status", "Status", "Open: people join and are let in. Paused: people join "
            "but nobody is let in. Closed: nobody new joins.",
            "open", choices=STATUS_CHOICES),
    Setting("admission_mode", "Admission", "Automatic: seats fill from the line as they "
            "free up. Manual: nobody is seated except by an admin.",
            "auto", choices=(("auto", "Automatic"), ("manual", "Manual")),
            group="capacity", kinds=LIVE),
    # The operator's choice of order (issue 30): who a free seat goes to (room_lib.lua
    # promote()); switching in either direction keeps every place and the join order.
    Setting("queueing_method", "Order of admission", "First come: seats go to the line "
            "in join order. Random: each free seat goes to someone drawn at random among "
            "those waiting and present (each draw is in the audit log with its seed, so it "
            "can be checked). Pass through: everyone is let in at once, whatever the "
            "seats: for a sale whose traffic turned out light (switching to it lets in "
            "everyone waiting). Reject: new joins are turned away with a notice; people "
            "waiting keep their places and are let in first come, people inside keep "
            "their seats. Switching between them loses no place.",
            "fifo", choices=(("fifo", "First come"), ("random", "Random"),
                             ("passthrough", "Pass through"), ("reject", "Reject new joins")),
            group="capacity", kinds=LIVE),
    # Bots (issue 25): a proof of work on every join (webapp/domain/challenge.py)
    Setting("challenge", "Puzzle on joining", "Off: nobody solves one. On: every new join "
            "solves a small puzzle first (a second or so of the browser's work; people who "
            "already hold a place never do). Auto: on while more joined in the last minute "
            "than the threshold below, and harder the more joined: the work below times "
            "the last minute's joins over the threshold, at most 16 times.",
            "off", choices=(("off", "Off"), ("on", "On"), ("auto", "Auto"))),
    Setting("challenge_threshold", "Puzzle threshold", "With the puzzle on auto: it is "
            "asked while more than this many joined in the last minute.",
            600, 1, 1_000_000, unit="joins a minute"),
    Setting("challenge_cost", "Puzzle work", "How much work the puzzle takes (the largest "
            "number of keys a browser may have to derive; on average half of it). The "
            "default takes a second or two on a computer, longer on a phone.",
            CHALLENGE_COST, 100, 50_000, unit="tries"),
    # Waitlist rooms (issue 13): the settings below apply to them alone.
    Setting("kind", "Kind", "Live: people wait on the page, checking in, and take a seat "
            "in the room. Waitlist: people sign up with an email and wait, days if need "
            "be, without checking in; only an admin or the schedule lets them in. Changes "
            "only while nobody waits or holds a seat.",
            "live", choices=(("live", "Live room"), ("waitlist", "Waitlist"))),
    Setting("ordering", "Order", "First come: join order. Priority: referral points "
            "first, then join order. Lottery: a random draw anyone can verify, held at "
            "the draw time or by an admin; later joiners go to the back. Changes only "
            "while nobody waits, except to lottery before its draw.",
            "fifo", choices=(("fifo", "First come"), ("priority", "Priority"),
                             ("lottery", "Lottery")),
            group="waitlist", kinds=WAITLIST),
    # The cap stays below 2**21 so that a priority score stays exact (waitlist.py).
    Setting("referral_boost", "Referral boost", "The points a referrer earns for each "
            "referee who confirms their email.",
            100, 0, 1_000_000, unit="points", group="referrals", kinds=WAITLIST),
    Setting("referral_cap", "Most referral points", "The most points one entry can earn "
            "from referrals.",
            500, 0, 1_000_000, unit="points", group="referrals", kinds=WAITLIST),
    Setting("referral_velocity", "Referral credits per hour", "A referrer's credits "
            "beyond this many in an hour are held for an admin's review.",
            10, 1, 1000, unit="credits", group="referrals", kinds=WAITLIST),
    Setting("entries_per_address", "Entries per address", "A referral from an address "
            "that already had this many entries is held for review (as is one from the "
            "referrer's own network or device).",
            3, 1, 10_000, unit="entries", group="referrals", kinds=WAITLIST),
    Setting("draw_at", "Draw time", "Lotteries: when the draw is held. Empty: only when "
            "an admin holds it.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time", group="waitlist",
            kinds=WAITLIST, moment=True, blank="only by an admin"),
    Setting("admit_every_minutes", "Admit every", "Let the next batch in every this long "
            "(once per period). Empty: only admins let people in.",
            None, 1, 10_080, nullable=True, unit="minutes", group="waitlist",
            kinds=WAITLIST, units=("minutes", "hours", "days"), blank="never"),
    Setting("admit_batch", "Batch size", "How many the schedule lets in each time "
            "(confirmed entries only, in order).",
            100, 1, 100_000, unit="people", group="waitlist", kinds=WAITLIST),
    Setting("claim_seconds", "Time to claim", "How long someone let in has to claim "
            "their place with the link in their email.",
            172_800, 60, 30 * 86400, unit="seconds", group="waitlist", kinds=WAITLIST,
            units=("minutes", "hours", "days")),
    Setting("claim_redirect_url", "After claiming", "The page someone is sent to once "
            "they claim their place. Empty: a \"you're in\" page.",
            "", text=500, url=True, group="waitlist", kinds=WAITLIST),
    Setting("notify_near", "Nearly-in email", "Email an entry when it reaches this many "
            "places from the front. Empty: no such email.",
            None, 1, 100_000, nullable=True, unit="places", group="waitlist",
            kinds=WAITLIST, blank="none"),
)  # fmt: skip
BY_NAME = {setting.name: setting for setting in SETTINGS}


DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in SETTINGS}


@dataclass(frozen=True)
class RoomSettings:
    """One room's settings as typed values; the defaults are the table's (a test checks
    that the two name the same settings, of the same types)."""

    title: str = DEFAULTS["title"]
    description: str = DEFAULTS["description"]
    capacity: int = DEFAULTS["capacity"]
    dropout_seconds: int = DEFAULTS["dropout_seconds"]
    max_checkin_seconds: int = DEFAULTS["max_checkin_seconds"]
    grace_seconds: int = DEFAULTS["grace_seconds"]
    session_seconds: int = DEFAULTS["session_seconds"]
    email_claim_seconds: int = DEFAULTS["email_claim_seconds"]
    typical_stay_seconds: int | None = DEFAULTS["typical_stay_seconds"]
    opens_at: int | None = DEFAULTS["opens_at"]
    prequeue_at: int | None = DEFAULTS["prequeue_at"]
    starts_at: int | None = DEFAULTS["starts_at"]
    ends_at: int | None = DEFAULTS["ends_at"]
    ends_at_clears_line: int = DEFAULTS["ends_at_clears_line"]
    stock: int | None = DEFAULTS["stock"]
    prequeue_per_address: int = DEFAULTS["prequeue_per_address"]
    prequeue_per_network: int = DEFAULTS["prequeue_per_network"]
    max_wait_seconds: int | None = DEFAULTS["max_wait_seconds"]
    max_line_length: int | None = DEFAULTS["max_line_length"]
    site_url: str = DEFAULTS["site_url"]
    pass_renew_seconds: int = DEFAULTS["pass_renew_seconds"]
    bypass_paths: str = DEFAULTS["bypass_paths"]
    identity: Identity = DEFAULTS["identity"]
    identity_secret: str = DEFAULTS["identity_secret"]
    identity_public_key: str = DEFAULTS["identity_public_key"]
    page_template: str = DEFAULTS["page_template"]
    page_asset_origins: str = DEFAULTS["page_asset_origins"]
    admit_per_minute: int | None = DEFAULTS["admit_per_minute"]
    status: RoomStatus = DEFAULTS["status"]
    admission_mode: AdmissionMode = DEFAULTS["admission_mode"]
    queueing_method: QueueingMethod = DEFAULTS["queueing_method"]
    challenge: Challenge = DEFAULTS["challenge"]
    challenge_threshold: int = DEFAULTS["challenge_threshold"]
    challenge_cost: int = DEFAULTS["challenge_cost"]
    kind: RoomKind = DEFAULTS["kind"]
    ordering: Ordering = DEFAULTS["ordering"]
    referral_boost: int = DEFAULTS["referral_boost"]
    referral_cap: int = DEFAULTS["referral_cap"]
    referral_velocity: int = DEFAULTS["referral_velocity"]
    entries_per_address: int = DEFAULTS["entries_per_address"]
    draw_at: int | None = DEFAULTS["draw_at"]
    admit_every_minutes: int | None = DEFAULTS["admit_every_minutes"]
    admit_batch: int = DEFAULTS["admit_batch"]
    claim_seconds: int = DEFAULTS["claim_seconds"]
    claim_redirect_url: str = DEFAULTS["claim_redirect_url"]
    notify_near: int | None = DEFAULTS["notify_near"]

    def changed(self, changes: Mapping[str, Any]) -> RoomSettings:
        """These settings with ``changes`` applied; InvalidSetting names the first bad one."""
        return RoomSettings(**{**self.as_dict(), **checked(changes)})

    def to_redis(self) -> list[str]:
        return redis_pairs(self.as_dict())

    @classmethod
    def from_redis(cls, raw: Mapping[str, str]) -> RoomSettings:
        """From the room's settings hash; a missing or unreadable field is its default."""
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            text = raw.get(setting.name)
            if text is None:
                continue
            try:
                values[setting.name] = setting.from_text(text)
            except InvalidSetting:
                continue
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def for_api(self) -> dict[str, Any]:
        """As the API answers: the moments of a drop in ISO 8601 (UTC)."""
        return {
            name: iso_text(value) if BY_NAME[name].iso else value
            for name, value in self.as_dict().items()
        }


def iso_text(at: int | None) -> str | None:
    """A Unix time as ISO 8601 in UTC ("2026-11-27T09:00:00Z"); None stays None."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_moment(name: str, text: str) -> int:
    """An ISO 8601 time as Unix seconds (whole); without an offset it is UTC."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise InvalidSetting(
            f"{name} must be an ISO 8601 time (2026-11-27T09:00:00Z), Unix seconds or null"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def applies(setting: Setting, kind: str) -> bool:
    """Whether ``setting`` means anything in a room of this kind."""
    return kind in setting.kinds


def checked(changes: Mapping[str, Any]) -> dict[str, Any]:
    """``changes`` validated against the table; InvalidSetting names the first bad one."""
    out = {}
    for name, value in changes.items():
        setting = BY_NAME.get(name)
        if setting is None:
            raise InvalidSetting(f"unknown setting {name[:40]!r}")
        out[name] = setting.check(value)
    return out


def redis_pairs(values: Mapping[str, Any]) -> list[str]:
    """Field, value pairs of the settings hash ('' for None)."""
    return [part for name, value in values.items() for part in (name, BY_NAME[name].to_text(value))]
