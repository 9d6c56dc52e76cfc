"""A room's settings, described once: ``SETTINGS`` is the table that validation, the
defaults, the Redis form (the room's settings hash), the API and the admin panel's
form all read. No Flask here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

RoomStatus = Literal["open", "paused", "closed"]
STATUSES: tuple[RoomStatus, ...] = ("open", "paused", "closed")
AdmissionMode = Literal["auto", "manual"]
ADMISSION_MODES: tuple[AdmissionMode, ...] = ("auto", "manual")
RoomKind = Literal["live", "waitlist"]
KINDS: tuple[RoomKind, ...] = ("live", "waitlist")
Ordering = Literal["fifo", "priority", "lottery"]
ORDERINGS: tuple[Ordering, ...] = ("fifo", "priority", "lottery")


# Free-text settings: no control characters but the newline; links are http(s) with a host.
TEXT_PATTERN = "^[^\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f]*$"
URL_PATTERN = (
    "^(https?://[^\\u0000-\\u0020\\u007f-\\u009f/?#\\\\]+[^\\u0000-\\u0020\\u007f-\\u009f]*)?$"
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
    nullable: bool = False  # None (empty) allowed: "no limit"
    choices: tuple[str, ...] = ()  # a text setting: one of these
    unit: str = ""
    text: int = 0  # a free-text setting of at most this many characters ('' when unset)
    url: bool = False  # a free-text setting that is empty or an http(s) address

    def check(self, value: Any) -> int | str | None:
        """The value if it is allowed (JSON types: int, str, None), else InvalidSetting."""
        if self.choices:
            if value not in self.choices:
                raise InvalidSetting(f"{self.name} must be one of {', '.join(self.choices)}")
            return str(value)
        if self.text:
            return self.check_text(value)
        if value is None and self.nullable:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 5.0 is the number 5 in JSON (and in JSON Schema)
        if isinstance(value, bool) or not isinstance(value, int):
            kind = "an integer or null" if self.nullable else "an integer"
            raise InvalidSetting(f"{self.name} must be {kind}")
        if not self.low <= value <= self.high:
            raise InvalidSetting(f"{self.name} must be between {self.low} and {self.high}")
        return value

    def check_text(self, value: Any) -> str:
        """A free text (None is ''): at most ``text`` characters, no control characters
        but newlines, trimmed; a link must be http(s). The same rules as the OpenAPI
        document's patterns (TEXT_PATTERN, URL_PATTERN), so the two cannot disagree."""
        if value is None:
            return ""
        if not isinstance(value, str):
            raise InvalidSetting(f"{self.name} must be a string")
        if len(value) > self.text:
            raise InvalidSetting(f"{self.name} must be at most {self.text} characters")
        if not re.fullmatch(URL_PATTERN if self.url else TEXT_PATTERN, value):
            if self.url:
                raise InvalidSetting(f"{self.name} must be an http:// or https:// address")
            raise InvalidSetting(f"{self.name} must be plain text")
        return value.strip()

    def from_text(self, text: str) -> int | str | None:
        """A value typed in a form (or stored in Redis): checked like ``check``."""
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


SETTINGS: tuple[Setting, ...] = (
    Setting("title", "Title", "The room's name as visitors see it (the address stays "
            "the same). Empty: the address.",
            "", text=80),
    Setting("description", "Description", "A line or two shown under the title on the "
            "lobby and every page of the room.",
            "", text=500),
    Setting("capacity", "Seats", "How many people are in the room at once (a waitlist "
            "room has no seats: it does not apply there).",
            10, 1, 1_000_000),
    Setting("dropout_seconds", "Check-in window", "A visitor in line who does not check "
            "in for this long drops out (the waiting page checks in for them).",
            30, 5, 3600, unit="seconds"),
    Setting("grace_seconds", "Grace period", "How long someone in the room keeps the "
            "seat after the page closes or the connection drops.",
            15, 1, 3600, unit="seconds"),
    Setting("session_seconds", "Seat without a page", "How long a seat is held without "
            "an open room page (an API client's seat, renewed by each check-in).",
            600, 10, 86400, unit="seconds"),
    Setting("typical_stay_seconds", "Typical stay", "How long a person usually holds a "
            "seat. It gives the first visitors an estimate until enough stays have been "
            "measured. Empty: no estimate until then.",
            None, 1, 7 * 86400, nullable=True, unit="seconds"),
    Setting("opens_at", "Opens at", "When a paused or closed room opens again, in Unix "
            "time (seconds), shown to visitors. Empty: not announced.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time"),
    Setting("max_wait_seconds", "Longest wait", "Refuse new joiners whose estimated wait "
            "is longer than this. Empty: no limit.",
            None, 1, 7 * 86400, nullable=True, unit="seconds"),
    Setting("max_line_length", "Longest line", "Refuse new joiners when this many are "
            "waiting. Empty: no limit.",
            None, 1, 10_000_000, nullable=True, unit="people"),
    Setting("status", "Status", "Open: people join and are let in. Paused: people join "
            "but nobody is let in. Closed: nobody new joins.",
            "open", choices=STATUSES),
    Setting("admission_mode", "Admission", "Automatic: seats fill from the line as they "
            "free up. Manual: nobody is seated except by an admin.",
            "auto", choices=ADMISSION_MODES),
    # Waitlist rooms (issue 13): the settings below apply to them alone.
    Setting("kind", "Kind", "Live: people wait on the page, checking in, and take a seat "
            "in the room. Waitlist: people sign up with an email and wait, days if need "
            "be, without checking in; only an admin or the schedule lets them in. Changes "
            "only while nobody waits or holds a seat.",
            "live", choices=KINDS),
    Setting("ordering", "Order", "Waitlist rooms. First come: join order. Priority: "
            "referral points first, then join order. Lottery: a random draw anyone can "
            "verify, held at the draw time or by an admin; later joiners go to the back. "
            "Changes only while nobody waits, except to lottery before its draw.",
            "fifo", choices=ORDERINGS),
    # The cap stays below 2**21 so that a priority score stays exact (waitlist.py).
    Setting("referral_boost", "Referral boost", "Waitlist rooms: the points a referrer "
            "earns for each referee who confirms their email.",
            100, 0, 1_000_000, unit="points"),
    Setting("referral_cap", "Most referral points", "Waitlist rooms: the most points one "
            "entry can earn from referrals.",
            500, 0, 1_000_000, unit="points"),
    Setting("referral_velocity", "Referral credits per hour", "Waitlist rooms: a "
            "referrer's credits beyond this many in an hour are held for an admin's review.",
            10, 1, 1000, unit="credits"),
    Setting("entries_per_address", "Entries per address", "Waitlist rooms: a referral "
            "from an address that already had this many entries is held for review "
            "(as is one from the referrer's own network or device).",
            3, 1, 10_000, unit="entries"),
    Setting("draw_at", "Draw time", "Lottery waitlists: when the draw is held, in Unix "
            "time (seconds). Empty: only when an admin holds it.",
            None, 0, 4_102_444_800, nullable=True, unit="Unix time"),
    Setting("admit_every_minutes", "Admit every", "Waitlist rooms: let the next batch in "
            "every this many minutes (once per period). Empty: only admins let people in.",
            None, 1, 10_080, nullable=True, unit="minutes"),
    Setting("admit_batch", "Batch size", "Waitlist rooms: how many the schedule lets in "
            "each time (confirmed entries only, in order).",
            100, 1, 100_000, unit="people"),
    Setting("claim_seconds", "Time to claim", "Waitlist rooms: how long someone let in has "
            "to claim their place with the link in their email.",
            172_800, 60, 30 * 86400, unit="seconds"),
    Setting("claim_redirect_url", "After claiming", "Waitlist rooms: the page someone is "
            "sent to once they claim their place. Empty: a \"you're in\" page.",
            "", text=500, url=True),
    Setting("notify_near", "Nearly-in email", "Waitlist rooms: email an entry when it "
            "reaches this many places from the front. Empty: no such email.",
            None, 1, 100_000, nullable=True, unit="places"),
)  # fmt: skip
BY_NAME = {setting.name: setting for setting in SETTINGS}


@dataclass(frozen=True)
class RoomSettings:
    """One room's settings as typed values (the defaults are those of ``SETTINGS``)."""

    title: str = ""
    description: str = ""
    capacity: int = 10
    dropout_seconds: int = 30
    grace_seconds: int = 15
    session_seconds: int = 600
    typical_stay_seconds: int | None = None
    opens_at: int | None = None
    max_wait_seconds: int | None = None
    max_line_length: int | None = None
    status: RoomStatus = "open"
    admission_mode: AdmissionMode = "auto"
    kind: RoomKind = "live"
    ordering: Ordering = "fifo"
    referral_boost: int = 100
    referral_cap: int = 500
    referral_velocity: int = 10
    entries_per_address: int = 3
    draw_at: int | None = None
    admit_every_minutes: int | None = None
    admit_batch: int = 100
    claim_seconds: int = 172_800
    claim_redirect_url: str = ""
    notify_near: int | None = None

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


def checked(changes: Mapping[str, Any]) -> dict[str, Any]:
    """``changes`` validated against the table; InvalidSetting names the first bad one."""
    out = {}
    for name, value in changes.items():
        setting = BY_NAME.get(name)
        if setting is None:
            raise InvalidSetting(f"unknown setting {name[:40]!r}")
        out[name] = setting.check(value)
    return out


def from_form(form: Mapping[str, str]) -> dict[str, Any]:
    """The settings typed in the admin form (text fields), validated: only those given."""
    out = {}
    for setting in SETTINGS:
        if setting.name in form:
            out[setting.name] = setting.from_text(form[setting.name])
    return out


def redis_pairs(values: Mapping[str, Any]) -> list[str]:
    """Field, value pairs of the settings hash ('' for None)."""
    return [part for name, value in values.items() for part in (name, BY_NAME[name].to_text(value))]
