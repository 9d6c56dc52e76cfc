"""One place per person (issue 29): the site's own word for who its customer is. No
Flask here.

A room with ``identity`` optional or required takes a token its site signed for its
signed-in customer: a JWT, HS256 with the room's ``identity_secret`` or EdDSA with its
``identity_public_key``, with ``sub`` (the customer's id, at most 200 characters),
``aud`` (the room's name), ``exp`` (at most ten minutes ahead) and ``jti`` (used once).
The room then holds one place per ``sub``: its joins are the engine's identity
``sub:<sub>``, so a second join for the same customer, from any device or address,
answers the same ticket (as Queue-it's enqueue token with a unique key does).
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from webapp.domain.refusals import RoomError
from webapp.domain.settings import RoomSettings
from webapp.redis.keys import Keys

MAX_IDENTITY_TOKEN = 4096  # characters: a token is a few hundred
MAX_SUB = 200  # characters of a customer's id
MAX_AHEAD = 600  # seconds: the furthest ``exp`` a token may carry
CLOCK_SKEW = 5  # seconds the site's clock may be ahead of ours
PREFIX = "sub:"  # the engine's identity of a customer's place


class IdentityInvalid(RoomError):
    """A token that is not the site's, is for another room, expired, too long-lived,
    or used before: 401 ``identity_invalid``; nothing changed."""

    code = "identity_invalid"


class IdentityRequired(RoomError):
    """The room takes only joins the site vouches for, and this one carried no token:
    401 ``identity_required``."""

    code = "identity_required"


class Customer(NamedTuple):
    """A verified token: whose it is, and its id (used once from now on)."""

    sub: str
    jti: str
    expires: float

    @property
    def identity(self) -> str:
        """The engine's identity of this customer's one place."""
        return f"{PREFIX}{self.sub}"


def customer_of(identity: str) -> str:
    """The site's customer id of an engine identity ('' for any other identity)."""
    return identity[len(PREFIX) :] if identity.startswith(PREFIX) else ""


class Identities:
    """Checks the site's identity tokens; each token's ``jti`` counts once per room."""

    def __init__(self, client: Any, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    def verify(self, room: str, settings: RoomSettings, token: str, now: float) -> Customer:
        """The customer ``token`` names, its ``jti`` used from now on; IdentityInvalid
        otherwise (nothing used)."""
        claims = self._claims(room, settings, token, now)
        jti = claims["jti"]
        key = self.keys.identity_used(room, hashlib.sha256(jti.encode()).hexdigest()[:32])
        kept_ms = int((claims["exp"] + CLOCK_SKEW - now) * 1000)  # until it expires
        if not self.client.set(key, "1", nx=True, px=kept_ms):
            raise IdentityInvalid("this identity token was used already")
        return Customer(claims["sub"], jti, float(claims["exp"]))

    def give_back(self, room: str, customer: Customer) -> None:
        """The join ``customer``'s token came with was refused: the token is unused."""
        digest = hashlib.sha256(customer.jti.encode()).hexdigest()[:32]
        self.client.delete(self.keys.identity_used(room, digest))

    @staticmethod
    def _claims(room: str, settings: RoomSettings, token: str, now: float) -> dict[str, Any]:
        if not isinstance(token, str) or not token or len(token) > MAX_IDENTITY_TOKEN:
            raise IdentityInvalid("no identity token, or one too long")
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
            key: Any
            if algorithm == "HS256" and settings.identity_secret:
                key = settings.identity_secret
            elif algorithm == "EdDSA" and settings.identity_public_key:
                key = load_pem_public_key(settings.identity_public_key.encode())
            else:
                raise IdentityInvalid("an identity token signed in a way this room does not take")
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=room,
                options={
                    "require": ["sub", "aud", "exp", "jti"],
                    "verify_exp": False,  # against the app's clock, below
                    "verify_iat": False,
                    "verify_nbf": False,
                },
            )
        except (jwt.PyJWTError, ValueError) as error:
            raise IdentityInvalid(f"not a valid identity token of this room: {error}") from None
        sub, jti, expires = claims["sub"], claims["jti"], claims["exp"]
        if not (isinstance(sub, str) and 0 < len(sub) <= MAX_SUB and sub.isprintable()):
            raise IdentityInvalid(f"sub must be the customer's id, 1 to {MAX_SUB} characters")
        if not (isinstance(jti, str) and 0 < len(jti) <= MAX_SUB):
            raise IdentityInvalid(f"jti must be text of 1 to {MAX_SUB} characters")
        if isinstance(expires, bool) or not isinstance(expires, int | float):
            raise IdentityInvalid("exp must be a time")
        if expires <= now:
            raise IdentityInvalid("this identity token has expired")
        if expires > now + MAX_AHEAD + CLOCK_SKEW:
            raise IdentityInvalid("an identity token may be valid for ten minutes at most")
        return claims
