"""The pass of a site room (issue 23): a JWT signed with EdDSA (Ed25519) that a visitor
let in holds for the room's site, checked by the gate (``GET /gate/<room>``) and by the
site itself from the published keys (``/.well-known/jwks.json``). No Flask here.

Claims: ``iss`` (the public URL), ``aud`` (the room), ``sub`` (the ticket's public id),
``iat`` (and ``ims``, the same in milliseconds), ``exp`` (twice the room's
``pass_renew_seconds`` after ``iat``), ``jti``,
``uid`` (the site's own id of its customer, when the room holds one place per customer:
``webapp.domain.identity``), and ``seat``: the ticket itself, sealed (AES-GCM under a
key derived from the app's secret), since the ticket is a secret its holder acts with
and the site needs only the public id.
A fresh pass is checked by signature and expiry alone; past half its life the gate
renews the seat in Redis (``Visits.renew_pass``) and hands out a fresh pass.

The gate's own check is cheaper than the signature's (issue 32): a pass also carries,
in its claim ``wrt``, an HMAC-SHA256 of its key id and claims under a key derived
from the app's secret, so a pass this deployment issued with a key it still publishes
is checked by that HMAC (about a tenth
of an Ed25519 verification with PyJWT's parsing) and every other by its signature. The
signature stays: a site checks the pass with the published keys and ignores ``wrt``
(a private claim, as RFC 7519 allows).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from functools import lru_cache
from typing import Any, NamedTuple

import jwt
import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from webapp.domain.tickets import public_id

ALGORITHM = "EdDSA"
COOKIE_PREFIX = "wr_pass_"
MAX_PASS = 2048  # characters: a pass is about 500; anything longer is not one of ours
CLOCK_SKEW = 5  # seconds a pass's iat may be ahead of this host's clock
VERIFIED_KEPT = 4096  # passes a process remembers as verified (about 3 MB)


class InvalidPass(ValueError):
    """No pass, or one that is tampered with, expired, for another room or signed by a
    key this app does not know."""


class Pass(NamedTuple):
    """A pass that verified: its room, the ticket it stands for and its times."""

    room: str
    token: str
    subject: str  # the ticket's public id
    issued: float
    expires: float
    jti: str
    issued_ms: int = 0  # when it was issued, in milliseconds (revocations compare it)

    def fresh(self, now: float) -> bool:
        """Within the first half of its life: good without asking Redis."""
        return now < self.issued + (self.expires - self.issued) / 2


def cookie_name(room: str) -> str:
    return f"{COOKIE_PREFIX}{room}"


def new_private_pem() -> str:
    """A fresh Ed25519 private key in PKCS#8 PEM (what ``WEBAPP_PASS_KEY`` holds)."""
    key = Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """What ``_b64`` (or a JWT's segment, unpadded alike) encoded."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _public_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def jwk_of(key: Ed25519PublicKey) -> dict[str, str]:
    """The public key as an RFC 7517 JWK; its ``kid`` is its RFC 7638 thumbprint, so
    the same key always has the same id on every host."""
    x = _b64(_public_raw(key))
    canonical = f'{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}'.encode()
    kid = _b64(hashlib.sha256(canonical).digest())
    return {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": ALGORITHM}


def _private_key(pem: str, name: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name} is not a PEM private key: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{name} must be an Ed25519 key")
    return key


def _public_key(pem: str, name: str) -> Ed25519PublicKey:
    """The public half of a PEM private key, or a PEM public key itself."""
    if "PRIVATE KEY" in pem:
        return _private_key(pem, name).public_key()
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name} is not a PEM key: {error}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{name} must be an Ed25519 key")
    return key


def _kid(raw: str) -> str | None:
    """The ``kid`` of a JWT's header, read without checking anything (it picks the key
    the signature is then checked with): one base64 decode, not PyJWT's second parse."""
    head = raw.partition(".")[0]
    try:
        header = json.loads(_unb64(head))
    except (ValueError, TypeError):
        return None
    kid = header.get("kid") if isinstance(header, dict) else None
    return kid if isinstance(kid, str) else None


class PassKeys:
    """The key passes are signed with, and every public key they verify with: its own
    and the previous one's (``WEBAPP_PASS_KEY_PREVIOUS``), so passes signed before a
    key change stay good until they expire."""

    def __init__(self, current_pem: str, previous_pem: str | None = None) -> None:
        self.signing = _private_key(current_pem, "WEBAPP_PASS_KEY")
        self.kid = jwk_of(self.signing.public_key())["kid"]
        published = [self.signing.public_key()]
        if previous_pem:
            published.append(_public_key(previous_pem, "WEBAPP_PASS_KEY_PREVIOUS"))
        self.public = {jwk_of(key)["kid"]: key for key in published}

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JSON Web Key Set of ``/.well-known/jwks.json``."""
        return {"keys": [jwk_of(key) for key in self.public.values()]}


class Passes:
    """Makes and checks the passes of every site room of this app."""

    def __init__(self, keys: PassKeys, issuer: str, secret: str) -> None:
        self.keys = keys
        self.issuer = issuer
        seal = hashlib.sha256(f"wr-pass-seat:{secret}".encode()).digest()
        self._seal = AESGCM(seal)
        self._tag_key = hashlib.sha256(f"wr-pass-tag:{secret}".encode()).digest()
        self._checked = lru_cache(maxsize=VERIFIED_KEPT)(self._check)

    def issue(
        self,
        room: str,
        token: str,
        renew_seconds: int,
        now: float,
        jti: str | None = None,
        uid: str = "",
    ) -> str:
        """A pass for ``token``'s seat in ``room``, good for 2 x ``renew_seconds``, with
        ``jti`` as its id (a new one by default); ``uid``: the site's own id of its
        customer, when the seat is one customer's (``webapp.domain.identity``)."""
        issued = int(now)
        nonce = secrets.token_bytes(12)
        sealed = nonce + self._seal.encrypt(nonce, token.encode(), room.encode())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": room,
            "sub": public_id(token),
            "iat": issued,
            "ims": int(now * 1000),  # iat in milliseconds: a revocation's moment is finer
            "exp": issued + 2 * renew_seconds,
            "jti": jti or secrets.token_urlsafe(12),
            "seat": _b64(sealed),
        }
        if uid:
            claims["uid"] = uid
        claims["wrt"] = self._tag(self.keys.kid, claims)
        return jwt.encode(claims, self.keys.signing, ALGORITHM, headers={"kid": self.keys.kid})

    def _tag(self, kid: str, claims: dict[str, Any]) -> str:
        """The HMAC of a pass's key id and claims (their JSON, keys sorted, no spaces;
        ``wrt``, the tag itself, left out)."""
        claims = {name: value for name, value in claims.items() if name != "wrt"}
        text = json.dumps(claims, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return _b64(hmac.new(self._tag_key, f"{kid}.{text}".encode(), hashlib.sha256).digest())

    def _tagged(self, raw: str, room: str) -> dict[str, Any] | None:
        """The claims of a pass this deployment issued, checked by its HMAC (``wrt``)
        as the signature would check them (issuer, audience, the claims required);
        None for any pass without a tag that matches (the signature decides then)."""
        head, _, rest = raw.partition(".")
        body = rest.partition(".")[0]
        try:
            header = orjson.loads(_unb64(head))
            claims = orjson.loads(_unb64(body))
        except (ValueError, TypeError):
            return None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return None
        tag, kid = claims.get("wrt"), header.get("kid")
        if header.get("alg") != ALGORITHM or not isinstance(tag, str):
            return None
        if not isinstance(kid, str) or kid not in self.keys.public:  # a key withdrawn
            return None
        if not hmac.compare_digest(tag, self._tag(kid, claims)):
            return None
        if claims.get("iss") != self.issuer or claims.get("aud") != room:
            return None
        if any(claims.get(c) is None for c in ("sub", "iat", "exp", "jti")):
            return None
        return claims

    def verify(self, room: str, raw: str | None, now: float) -> Pass:
        """The pass of ``room`` in ``raw``, or InvalidPass: signature (by a published
        key), issuer, audience and expiry against ``now``; no Redis. A pass this process
        verified lately is not verified again (the same text has the same signature):
        only its expiry is checked, so a visitor's many requests cost one signature
        check per pass."""
        if not raw or len(raw) > MAX_PASS:
            raise InvalidPass("no pass")
        held = self._checked(room, raw)
        if now >= held.expires or held.issued > now + CLOCK_SKEW:
            raise InvalidPass("expired")
        return held

    def _check(self, room: str, raw: str) -> Pass:
        """Everything of ``verify`` but the time (cached per process: ``__init__``)."""
        claims = self._tagged(raw, room) or self._signed(room, raw)
        issued, expires = claims["iat"], claims["exp"]
        if not all(isinstance(v, int) for v in (issued, expires)):
            raise InvalidPass("bad times")
        token = self._unseal(room, claims.get("seat"))
        if public_id(token) != claims["sub"]:
            raise InvalidPass("the seat is not the subject's")
        issued_ms = claims.get("ims", issued * 1000)
        if isinstance(issued_ms, bool) or not isinstance(issued_ms, int):
            raise InvalidPass("bad times")
        return Pass(room, token, claims["sub"], issued, expires, str(claims["jti"]), issued_ms)

    def _signed(self, room: str, raw: str) -> dict[str, Any]:
        """The claims of a pass checked by its signature (a published key's)."""
        try:
            kid = _kid(raw)
            key = self.keys.public.get(kid) if kid is not None else None
            if key is None:
                raise InvalidPass("signed by an unknown key")
            return jwt.decode(
                raw,
                key,
                algorithms=[ALGORITHM],
                audience=room,
                issuer=self.issuer,
                options={
                    "require": ["iss", "aud", "sub", "iat", "exp", "jti"],
                    "verify_exp": False,  # against the app's clock, below
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as error:
            raise InvalidPass(str(error)) from None

    def _unseal(self, room: str, sealed: Any) -> str:
        if not isinstance(sealed, str):
            raise InvalidPass("no seat")
        try:
            raw = _unb64(sealed)
            return self._seal.decrypt(raw[:12], raw[12:], room.encode()).decode()
        except Exception:  # any failure to open it is a pass we did not make
            raise InvalidPass("bad seat") from None
