"""The words of the admin panel (English only): the names of audit kinds and of the
reasons the engine records, and an audit entry's detail in words. The settings' own
labels and choices are the table's (``webapp.domain.settings``)."""

from __future__ import annotations

import json
from typing import Any

from webapp.domain.draw import SeatDraw
from webapp.domain.reports import AuditEntry, Person
from webapp.domain.settings import BY_NAME, InvalidSetting
from webapp.views.admin.form import shown

STATUS_ACTIONS = {"open": "Open the room", "paused": "Pause admissions", "closed": "Close the room"}
AUDIT_KINDS = {"create": "Room created", "settings": "Settings changed", "admit": "Admitted",
               "remove": "Removed", "leave": "Left", "move": "Moved in line",
               "notice": "Notice broadcast", "notice_cleared": "Notice cleared",
               "referral_credit": "Referral credited", "referral_hold": "Referral held for "
               "review", "referral_void": "Referral void", "draw_commit": "Lottery seed "
               "committed", "draw": "Lottery drawn",
               "lapse": "Place lapsed unclaimed", "release": "Released by the site",
               "draw_reveal": "Drop drawn (seed revealed)",
               "stock": "Stock", "site_key": "Site key", "seat_end": "Seat ended"}  # fmt: skip
HELD_WHY = {"network": "the same network as the referrer", "device": "the referrer's device",
            "address": "an address with many entries", "velocity": "too many referrals in an "
            "hour"}  # fmt: skip
VOID_WHY = {"loop": "it closed a referral loop", "admin": "an admin voided it",
            "gone": "its referrer is gone"}  # fmt: skip
LEGS = {"pending": "Pending: not confirmed yet", "credited": "Credited", "held": "Held for "
        "review", "void": "Void"}  # fmt: skip
# Why places ended and why joins were refused, as a room's report names them
ENDED_WHY = {"left": "Left", "removed": "Removed by an admin", "dropped": "Dropped out (missed "
             "check-ins)", "unclaimed": "Seat offered, not claimed", "grace": "Away past the "
             "grace period", "session": "Stopped checking in", "released": "Released by the "
             "site", "sold_out": "Sold out", "event_ended": "Event ended"}  # fmt: skip
REFUSED_WHY = {"throttled": "Too many joins from one address or network",
               "prequeue_capped": "Pre-queue cap of an address or network",
               "puzzle": "Proof of work asked", "identity_required": "No identity from the "
               "site", "identity_invalid": "Identity not valid", "sold_out": "Sold out",
               "event_ended": "Event ended", "not_open_yet": "Not open yet",
               "closed": "Room closed", "admission_control": "Line full or wait too long",
               "rejecting": "New joins rejected (order of admission)",
               "invalid_input": "Bad input"}  # fmt: skip
DETAILS = {
    ("admit", "line"): "from the line",
    ("admit", "direct"): "on joining (a seat was free)",
    ("remove", "waiting"): "was waiting in line",
    ("remove", "offered"): "was offered a seat",
    ("remove", "admitted"): "held a seat",
    ("leave", "waiting"): "left the line",
    ("leave", "offered"): "left when offered a seat",
    ("leave", "admitted"): "gave up the seat",
    ("release", "offered"): "was offered a seat",
    ("release", "admitted"): "was on the site",
    ("seat_end", "grace"): "away past the grace period (every page closed)",
    ("seat_end", "session"): "stopped checking in",
    ("seat_end", "unclaimed"): "offered a seat, did not take it",
}


def label(person: Person) -> str:
    """How the panel names a person: "Ann (AB12CD)", or just the code without a name."""
    return f"{person.name} ({person.code})" if person.name else person.code


def audit_detail(entry: AuditEntry) -> str:
    """An entry's detail in words (the CSV and the API keep it as stored)."""
    if entry.kind == "move" and "->" in entry.detail:
        was, now = entry.detail.split("->", 1)
        return f"from place {was} to {now}"
    draw = SeatDraw.parse(entry.detail) if entry.kind == "admit" else None
    if draw is not None:  # random order's draw: checkable (docs/operations.md)
        checked = "checks out" if draw.verify() else "DOES NOT CHECK OUT"
        return (f"drawn at random: place {draw.pick + 1} of {draw.size} in line "
                f"(seed {draw.seed}; {checked})")  # fmt: skip
    if entry.kind in ("create", "settings") and entry.detail.startswith("["):
        return settings_detail(entry.kind, entry.detail)
    return DETAILS.get((entry.kind, entry.detail), entry.detail)


def settings_detail(kind: str, detail: str) -> str:
    """room_configure.lua's [[field, old, new], ...] as "Capacity 2 → 3; ..." (a new
    room's: "Capacity 25; ...")."""
    try:
        changes = json.loads(detail)
        said = [change_words(kind, *change) for change in changes]
    except (ValueError, TypeError):
        return detail
    return "; ".join(said)


def change_words(kind: str, name: str, old: str, new: str) -> str:
    setting = BY_NAME.get(name)
    label = setting.label if setting else name
    if kind == "create":
        return f"{label} {stored_words(name, new)}"
    return f"{label} {stored_words(name, old)} → {stored_words(name, new)}"


def stored_words(name: str, text: str) -> str:
    """A value as the settings hash holds it, in words."""
    setting = BY_NAME.get(name)
    if setting is None:
        return text
    value: Any
    if setting.markup:  # kept as its size and digest when long (room_configure.lua)
        return shown(setting, text)
    try:
        value = setting.from_text(text)
    except InvalidSetting:
        return text
    return shown(setting, value)
