"""Signed claim links (issue 13, phase 2a): the token in ``/claim/<token>`` that an
admission email carries. No Flask: the mailer signs, the claim view verifies.

The token is ``[room, entry, kind, expires]`` signed with ``SECRET_KEY`` (itsdangerous,
salt "claim"). The expiry is inside the signed payload rather than itsdangerous'
own timestamp, so the time is an input (``now``) that tests and hosts control.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, NamedTuple

from itsdangerous import BadSignature, URLSafeSerializer, URLSafeTimedSerializer

from webapp.domain.moves import HOLDER_TTL, LIFETIME
from webapp.redis.keys import Keys
from webapp.redis.replies import record
from webapp.redis.scripts import Scripts

SALT = "claim"


class Claim(NamedTuple):
    room: str
    entry: str
    kind: str  # the notice the link came in: admitted (a waitlist), offered (a live seat)
    expires: float


class ClaimRefused(Exception):
    """A link that opens nothing: ``reason`` is tampered or expired."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _serializer(secret: str | bytes) -> URLSafeSerializer:
    return URLSafeSerializer(secret, salt=SALT)


def sign_claim(
    secret: str | bytes, room: str, entry: str, now: float, seconds: float, kind: str = "admitted"
) -> str:
    return _serializer(secret).dumps([room, entry, kind, int(now + seconds)])


def verify_claim(secret: str | bytes, token: str, now: float) -> Claim:
    """The claim a token signs; ClaimRefused("tampered") or ("expired")."""
    try:
        signed = _serializer(secret).loads(token)
    except BadSignature:
        raise ClaimRefused("tampered") from None
    if not (isinstance(signed, list) and len(signed) == 4):
        raise ClaimRefused("tampered")
    room, entry, kind, expires = signed
    if not (isinstance(room, str) and isinstance(entry, str) and isinstance(kind, str)):
        raise ClaimRefused("tampered")
    if not isinstance(expires, int) or now >= expires:
        raise ClaimRefused("expired")
    return Claim(room, entry, kind, float(expires))


def claim_url(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/claim/{token}"


# The other links a waitlist's emails carry (``webapp.web.links`` wraps these for the views):
# the entry's own page (no expiry: bookmarked for weeks) and the confirmation link
# (checked against its age when used).


def sign_entry(secret: str | bytes, room: str, entry: str) -> str:
    return URLSafeSerializer(secret, salt="entry").dumps([room, entry])


def sign_confirm(secret: str | bytes, room: str, entry: str, email: str = "") -> str:
    """A confirmation link's token; ``email``, the address it is mailed to, is named in
    it (``address_tag``), so a link sent before the entry corrected its address
    confirms nothing (waitlist_confirm.lua)."""
    signed = [room, entry, address_tag(entry, email)] if email else [room, entry]
    return URLSafeTimedSerializer(secret, salt="confirm").dumps(signed)


def address_tag(entry: str, email: str) -> str:
    """Names an address in a link without showing it: the first 12 hex digits of SHA-1
    of "<entry id>:<address>" (the link is signed; the tag only tells two addresses
    apart, and Lua computes the same with redis.sha1hex)."""
    return hashlib.sha1(f"{entry}:{email}".encode(), usedforsecurity=False).hexdigest()[:12]


def entry_url(public_url: str, room: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/rooms/{room}/entry/{token}"


def confirm_url(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/confirm/{token}"


class Claims:
    """Uses claim links: each admits once (``waitlist_claim.lua``)."""

    def __init__(self, client: Any, keys: Keys, scripts: Scripts) -> None:
        self.client = client
        self.keys = keys
        self.scripts = scripts

    def claim(self, claim: Claim, now: float) -> str:
        """claimed, used (before), missing, not_admitted or lapsed (its deadline passed)."""
        waitlist = self.keys.waitlist(claim.room)
        keys = {**waitlist.named(), "wl_claimed": self.keys.claims(claim.room)}
        reply = self.scripts["waitlist_claim"](keys=keys, args=[claim.entry, now])
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def refusal(self, claim: Claim, now: float) -> str | None:
        """Why the claim would be refused now, as far as a read tells (used or lapsed),
        or None: for the page that shows the button. Changes nothing."""
        waitlist = self.keys.waitlist(claim.room)
        pipe = self.client.pipeline(transaction=False)
        pipe.hexists(self.keys.claims(claim.room), claim.entry)
        pipe.zscore(waitlist.unclaimed, claim.entry)
        pipe.hget(waitlist.entries, claim.entry)
        used, deadline, raw = pipe.execute()
        if used:
            return "used"
        if deadline is not None and float(deadline) <= now:
            return "lapsed"
        if record(raw).get("st") == "lapsed":
            return "lapsed"
        return None


class SeatTaken(NamedTuple):
    """A live room's offered seat taken by its claim link: the browser that used it
    becomes the ticket's holder (as a move to another device does, ``webapp.domain.moves``)."""

    token: str
    identity: str  # the ticket's identity ("" if it has none)
    holder: str  # the new holder id: the old browser's next poll shows "moved"


def _live_state(client: Any, keys: Keys, claim: Claim) -> tuple[str | None, str]:
    raw = client.hget(keys.room(claim.room).tickets, claim.entry)
    if raw is None:
        return None, ""
    ticket = record(raw)
    return str(ticket.get("st", "")), str(ticket.get("id", ""))


class LiveClaims:
    """Uses the claim link of a live room's ``offered`` notice: it takes the seat (the
    check-in that claims an offer) once, for the browser that opens it."""

    def __init__(self, client: Any, keys: Keys, scripts: Scripts) -> None:
        self.client = client
        self.keys = keys
        self.scripts = scripts

    def _used_key(self, claim: Claim) -> str:
        return self.keys.move_used(claim.room, f"claim-{claim.entry}")

    def refusal(self, claim: Claim) -> str | None:
        """used, lapsed (the offer ran out or the ticket ended), missing, or None."""
        if self.client.exists(self._used_key(claim)):
            return "used"
        state, _ = _live_state(self.client, self.keys, claim)
        if state is None:
            return "missing"
        if state not in ("offered", "admitted"):
            return "lapsed"
        return None

    def take(self, claim: Claim, now: float, check_in: Any) -> SeatTaken | str:
        """Takes the seat: ``check_in(room, token)`` (the engine's check-in, which claims
        an offered seat; it raises if the ticket is gone) and a new holder, once. Returns
        SeatTaken, or the refusal (used, lapsed, missing) having changed nothing."""
        refusal = self.refusal(claim)
        if refusal is not None:
            return refusal
        _, identity = _live_state(self.client, self.keys, claim)
        holder = secrets.token_urlsafe(12)
        used_for = max(LIFETIME, int(claim.expires - now) + 60)
        keys = {
            "link_used": self._used_key(claim),
            "holder": self.keys.move_holder(claim.room, claim.entry),
        }
        if not self.scripts["place_move"](keys=keys, args=[used_for, HOLDER_TTL, holder]):
            return "used"
        try:
            check_in(claim.room, claim.entry)
        except Exception:  # the ticket ended in between (TicketGone): the seat is gone
            return "lapsed"
        return SeatTaken(claim.entry, identity, holder)
