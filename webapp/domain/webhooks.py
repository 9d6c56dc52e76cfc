"""Webhooks by the Standard Webhooks specification (docs/webhooks.md). No Flask.

An endpoint (a URL, the event types it takes, the rooms or all) is made by an admin and
gets a secret, ``whsec_`` + base64, shown once. What happens in a room is written by the
script that makes the change into the room's events stream (``events_lib.lua``), only
while some enabled endpoint takes the room's events (the settings' ``webhooks`` flag,
kept by ``flag_rooms``). The webhook worker (``webapp/workers/webhooks.py``) moves each
event into every matching endpoint's durable outbox (``hook_enqueue.lua``), then sends
them (``hook_claim.lua``, ``hook_done.lua``): at least once, the same ``webhook-id`` on
every try, one ticket's events in order, retried on a schedule for 24 hours.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import orjson
from standardwebhooks.webhooks import Webhook

from webapp.domain.clock import Clock
from webapp.domain.tickets import public_id, valid_room_name
from webapp.redis.keys import HookKeys, Keys
from webapp.redis.replies import text
from webapp.redis.scripts import Scripts

EVENT_TYPES = (
    "visitor.joined",
    "visitor.admitted",
    "visitor.ended",
    "drop.started",
    "room.sold_out",
    "room.changed",
    "waitlist.confirmed",
    "waitlist.admitted",
)
# The engine's reasons a ticket ended (room_lib.lua), in the webhook's words: a seat
# not taken or not kept up is "expired"; the engine's own word stays in "detail".
END_REASONS = {
    "left": "left",
    "released": "released",
    "removed": "removed",
    "dropped": "dropped",
    "unclaimed": "expired",
    "grace": "expired",
    "session": "expired",
    "sold_out": "sold_out",
    "event_ended": "event_ended",
}
RETRY_AFTER = (1, 5, 30, 120, 600, 1800)  # seconds after each failed try; then hourly
HOURLY = 3600
GIVE_UP_AFTER = 86400  # a delivery failing this long is failed; an endpoint, disabled
ROTATION_OVERLAP = 86400  # a rotated secret still signs for this long
SEND_TIMEOUT = 10.0  # a 2xx within this many seconds is a delivery
KEPT = 1000  # finished deliveries remembered per endpoint (the panel shows 100)
SHOWN = 100
MAX_URL = 2000
MAX_ROOMS = 100
# Delivery time (event to the receiver's 2xx) histogram bounds, seconds
BOUNDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0, 86400.0)
STATES = ("pending", "sending", "retry", "delivered", "failed")


class InvalidEndpoint(ValueError):
    """An endpoint's field that cannot be used (the message says which, and why)."""


@dataclass(frozen=True)
class Endpoint:
    id: str
    url: str
    events: tuple[str, ...]  # empty: every type
    rooms: tuple[str, ...] | None  # None: every room
    enabled: bool
    created: float
    disabled_at: float | None = None  # disabled by the worker after 24 h of failures
    failing_since: float | None = None
    secrets: tuple[tuple[str, float], ...] = ()  # (secret, until; 0: the current one)
    pending: int = 0

    def wants(self, room: str, kind: str) -> bool:
        return (
            self.enabled
            and (not self.events or kind in self.events)
            and (self.rooms is None or room in self.rooms)
        )

    def signing_secrets(self, now: float) -> list[str]:
        """The secrets that sign now: the current one and a rotated one for 24 hours."""
        return [secret for secret, until in self.secrets if not until or until > now]

    def public(self) -> dict[str, Any]:
        """What the API shows (never a secret)."""
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events) or list(EVENT_TYPES),
            "rooms": None if self.rooms is None else list(self.rooms),
            "enabled": self.enabled,
            "created": self.created,
            "disabled_at": self.disabled_at,
            "failing_since": self.failing_since,
            "pending": self.pending,
        }


@dataclass(frozen=True)
class Delivery:
    id: str  # the webhook-id
    type: str
    room: str
    at: float  # when the event happened
    state: str  # pending, sending, retry, delivered, failed
    attempts: int
    status: int  # the last response's status (0: none, as a timeout)
    error: str
    next: float | None
    last: float | None
    body: str
    first: float | None = None  # the first try (the 24 hours run from it)
    order: str = ""


@dataclass(frozen=True)
class Event:
    """One event of a room as an endpoint's outbox takes it."""

    id: str  # the webhook-id
    type: str
    room: str
    at: float
    body: str  # the JSON sent, the same on every try
    order: str  # the ticket's public id ('' for an event of the room)


@dataclass(frozen=True)
class Try:
    """How one try of a delivery went: the response's status (0: none) by ``at``."""

    delivery: Delivery
    status: int
    error: str
    at: float


@dataclass(frozen=True)
class Figures:
    """Every endpoint's counts added up, for /metrics."""

    pending: int = 0
    delivered: int = 0
    failed: int = 0
    retry: int = 0
    buckets: list[tuple[str, float]] = field(default_factory=list)  # cumulative
    seconds: float = 0.0


def new_secret() -> str:
    """``whsec_`` and 32 random bytes in base64 (the specification's form)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def sign(secret_list: Sequence[str], webhook_id: str, at: datetime, body: str) -> str:
    """The ``webhook-signature`` header: ``v1,<base64>`` by each secret, space-separated."""
    return " ".join(Webhook(secret).sign(webhook_id, at, body) for secret in secret_list)


def headers(
    endpoint: Endpoint, webhook_id: str, body: str, sent: float, now: float
) -> dict[str, str]:
    """The three headers of one try: timestamped ``sent`` (this host's wall clock, which
    the receiver compares with its own), signed by the secrets in force at ``now`` (the
    app's clock, which times the rotation's overlap)."""
    return {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(sent)),
        "webhook-signature": sign(
            endpoint.signing_secrets(now), webhook_id, datetime.fromtimestamp(int(sent), UTC), body
        ),
    }


def next_try(attempts: int, first: float, now: float) -> float | None:
    """When to try again after the ``attempts``-th try failed at ``now``: 1 s, 5 s,
    30 s, 2 min, 10 min, 30 min, then hourly; None once that is past 24 hours from the
    first try (the delivery has failed)."""
    delay = RETRY_AFTER[attempts - 1] if attempts <= len(RETRY_AFTER) else HOURLY
    later = now + delay
    return None if later - first > GIVE_UP_AFTER else later


def bucket(seconds: float) -> str:
    """The stats hash's field of one delivery time's histogram bucket (its own count)."""
    i = bisect.bisect_left(BOUNDS, seconds)
    return f"le:{BOUNDS[i]:g}" if i < len(BOUNDS) else "le:+Inf"


def webhook_id(room: str, stream_id: str) -> str:
    """One event's id, the same for every endpoint and every try."""
    return "msg_" + hashlib.sha256(f"{room}\n{stream_id}".encode()).hexdigest()[:26]


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_body(room: str, fields: Mapping[str, str]) -> tuple[str, str, str]:
    """An event of the room's stream as the webhook's type, JSON body and ordering key
    (the ticket's public id; '' for an event of the room). The ticket's token never
    leaves: its public id does."""
    kind, token = fields.get("type", ""), fields.get("ticket", "")
    extra = orjson.loads(fields.get("data") or "{}")
    data: dict[str, Any] = {"room": room}
    order = ""
    if token:
        order = public_id(token)
        data["entry" if kind.startswith("waitlist.") else "ticket"] = order
    if fields.get("sub"):
        data["sub"] = fields["sub"]
    if kind == "visitor.ended":
        why = str(extra.get("reason", ""))
        data["reason"] = END_REASONS.get(why, why)
        data["detail"] = why
    elif kind == "room.changed":
        changes = extra.get("changes") or []
        data["settings"] = {name: {"old": old, "new": new} for name, old, new in changes}
    else:
        data.update({k: v for k, v in extra.items() if isinstance(k, str)})
    at = float(fields.get("at") or 0)
    body = orjson.dumps({"type": kind, "timestamp": iso(at), "data": data}).decode()
    return kind, body, order


def check_url(url: object, hosts: Iterable[str] = ()) -> str:
    """An endpoint's URL: http or https with a host (and, when the operator lists the
    hosts endpoints may name, one of those)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise InvalidEndpoint(f"url must be an http or https URL of at most {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 (a port that is not a number raises)
    except ValueError as error:
        raise InvalidEndpoint(f"url is not a URL: {error}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidEndpoint("url must be an http or https URL with a host")
    allowed = {h.strip().lower() for h in hosts if h.strip()}
    if allowed and host.lower() not in allowed:
        raise InvalidEndpoint(f"url's host {host} is not one of WEBAPP_WEBHOOK_HOSTS")
    return url


def check_events(events: object) -> tuple[str, ...]:
    if events is None:
        return ()
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise InvalidEndpoint("events must be a list of event types")
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise InvalidEndpoint(f"unknown event types: {', '.join(unknown)}")
    if len(set(events)) < len(events):
        raise InvalidEndpoint("events must name each type once")
    return tuple(e for e in EVENT_TYPES if e in events)


def check_rooms(rooms: object) -> tuple[str, ...] | None:
    if rooms is None:
        return None
    if not isinstance(rooms, list) or not all(isinstance(r, str) for r in rooms):
        raise InvalidEndpoint("rooms must be a list of room names, or absent for every room")
    if len(rooms) > MAX_ROOMS or not all(valid_room_name(r) for r in rooms):
        raise InvalidEndpoint(f"rooms must be at most {MAX_ROOMS} valid room names")
    return tuple(dict.fromkeys(rooms))


class Webhooks:
    """The endpoints and their outboxes. Thread-safe: share one per process."""

    def __init__(
        self, client: Any, keys: Keys, scripts: Scripts, clock: Clock, hosts: Iterable[str] = ()
    ) -> None:
        self.client = client
        self.keys = keys
        self.scripts = scripts
        self.clock = clock
        self.hosts = tuple(hosts)

    # -- endpoints -----------------------------------------------------------

    def create(
        self, url: object, events: object = None, rooms: object = None
    ) -> tuple[Endpoint, str]:
        """A new endpoint, enabled, and its secret (shown once)."""
        url, kinds, names = check_url(url, self.hosts), check_events(events), check_rooms(rooms)
        endpoint_id = "ep_" + secrets.token_hex(8)
        secret = new_secret()
        self.client.hset(
            self.keys.hook(endpoint_id).endpoint,
            mapping={
                "url": url,
                "events": orjson.dumps(kinds).decode(),
                "rooms": "" if names is None else orjson.dumps(names).decode(),
                "enabled": "1",
                "created": repr(self.clock()),
                "secrets": orjson.dumps([[secret, 0]]).decode(),
            },
        )
        self.client.sadd(self.keys.hooks, endpoint_id)
        self.flag_rooms()
        endpoint = self.get(endpoint_id)
        assert endpoint is not None
        return endpoint, secret

    def get(self, endpoint_id: str) -> Endpoint | None:
        if not endpoint_id.startswith("ep_") or len(endpoint_id) > 40:
            return None
        keys = self.keys.hook(endpoint_id)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(keys.endpoint)
        pipe.hget(keys.stats, "pending")
        raw, pending = pipe.execute()
        return _endpoint(endpoint_id, raw, pending) if raw else None

    def all(self) -> list[Endpoint]:
        ids = sorted(text(i) for i in self.client.smembers(self.keys.hooks))
        pipe = self.client.pipeline(transaction=False)
        for endpoint_id in ids:
            keys = self.keys.hook(endpoint_id)
            pipe.hgetall(keys.endpoint)
            pipe.hget(keys.stats, "pending")
        replies = pipe.execute()
        found = []
        for i, endpoint_id in enumerate(ids):
            raw, pending = replies[2 * i], replies[2 * i + 1]
            if raw:
                found.append(_endpoint(endpoint_id, raw, pending))
        return sorted(found, key=lambda e: e.created)

    def update(self, endpoint_id: str, changes: Mapping[str, Any]) -> Endpoint | None:
        """Changes some of url, events, rooms, enabled (re-enabling one the worker
        disabled clears its failures); None if there is no such endpoint."""
        if self.get(endpoint_id) is None:
            return None
        unknown = sorted(set(changes) - {"url", "events", "rooms", "enabled"})
        if unknown:
            raise InvalidEndpoint(f"unknown fields: {', '.join(unknown)}")
        mapping: dict[str, str] = {}
        if "url" in changes:
            mapping["url"] = check_url(changes["url"], self.hosts)
        if "events" in changes:
            mapping["events"] = orjson.dumps(check_events(changes["events"])).decode()
        if "rooms" in changes:
            names = check_rooms(changes["rooms"])
            mapping["rooms"] = "" if names is None else orjson.dumps(names).decode()
        key = self.keys.hook(endpoint_id).endpoint
        if "enabled" in changes:
            if not isinstance(changes["enabled"], bool):
                raise InvalidEndpoint("enabled must be true or false")
            mapping["enabled"] = "1" if changes["enabled"] else "0"
            if changes["enabled"]:
                self.client.hdel(key, "disabled", "failing")
        if mapping:
            self.client.hset(key, mapping=mapping)
        self.flag_rooms()
        return self.get(endpoint_id)

    def delete(self, endpoint_id: str) -> bool:
        if self.get(endpoint_id) is None:
            return False
        self.client.delete(*self.keys.hook(endpoint_id).all())
        self.client.srem(self.keys.hooks, endpoint_id)
        self.flag_rooms()
        return True

    def rotate(self, endpoint_id: str) -> tuple[Endpoint, str] | None:
        """A new secret; the one it replaces still signs for 24 hours (every try then
        carries both signatures), any older one no longer."""
        endpoint = self.get(endpoint_id)
        if endpoint is None:
            return None
        now = self.clock()
        secret = new_secret()
        kept = [(s, now + ROTATION_OVERLAP) for s, until in endpoint.secrets if not until]
        self.client.hset(
            self.keys.hook(endpoint_id).endpoint,
            "secrets",
            orjson.dumps([(secret, 0), *kept]).decode(),
        )
        rotated = self.get(endpoint_id)
        assert rotated is not None
        return rotated, secret

    # -- which rooms write events ----------------------------------------------

    def flag_rooms(self, rooms: Iterable[str] | None = None) -> None:
        """Sets each room's ``webhooks`` setting to whether an enabled endpoint takes
        its events (the scripts write events only then); every room by default."""
        endpoints = [e for e in self.all() if e.enabled]
        every = any(e.rooms is None for e in endpoints)
        named = {r for e in endpoints for r in (e.rooms or ())}
        names = [text(r) for r in self.client.smembers(self.keys.rooms)] if rooms is None else rooms
        for room in names:
            if valid_room_name(room):
                on = every or room in named
                self.scripts["hook_flag"](keys=self.keys.room(room).named(), args=[int(on)])

    # -- the outbox ------------------------------------------------------------

    def enqueue(self, endpoint_id: str, events: Sequence[Event]) -> int:
        """Puts events in the endpoint's outbox, each once; how many were new (-1: the
        endpoint is gone)."""
        args: list[Any] = [self.clock(), KEPT]
        for e in events:
            record = {"type": e.type, "room": e.room, "at": e.at, "body": e.body, "st": "pending"}
            if e.order:
                record["o"] = e.order
            args += [e.id, e.order, orjson.dumps(record).decode(), e.at]
        return int(
            self.scripts["hook_enqueue"](keys=self.keys.hook(endpoint_id).named(), args=args)
        )

    def claim(self, endpoint_id: str, worker: str, lease: float, most: int) -> list[Delivery]:
        """Deliveries due now, the sending worker's for ``lease`` seconds."""
        reply = self.scripts["hook_claim"](
            keys=self.keys.hook(endpoint_id).named(),
            args=[self.clock(), lease, worker, most],
        )
        return [_delivery(text(reply[i]), reply[i + 1]) for i in range(0, len(reply), 2)]

    def finish(self, endpoint_id: str, worker: str, tries: Sequence[Try]) -> list[str]:
        """Records how tries went: delivered (a 2xx), retry, or failed (24 hours of
        tries); an endpoint failing for 24 hours is disabled. Returns each outcome."""
        args: list[Any] = [worker, GIVE_UP_AFTER]
        outcomes = []
        for t in tries:
            d = t.delivery
            ok = 200 <= t.status < 300
            later = None if ok else next_try(d.attempts, d.first or t.at, t.at)
            outcome = "delivered" if ok else ("retry" if later is not None else "failed")
            seconds = max(t.at - d.at, 0.0)
            outcomes.append(outcome)
            args += [d.id, t.at, outcome, later or 0, t.status, t.error[:200], bucket(seconds),
                     repr(seconds)]  # fmt: skip
        if tries:
            self.scripts["hook_done"](keys=self.keys.hook(endpoint_id).named(), args=args)
        return outcomes

    def resend(self, endpoint_id: str, delivery_id: str) -> bool:
        """Sends a delivery again now, with the same webhook-id ("send again")."""
        done = self.scripts["hook_resend"](
            keys=self.keys.hook(endpoint_id).named(),
            args=[delivery_id, self.clock()],
        )
        return int(done) == 1

    def deliveries(self, endpoint_id: str, most: int = SHOWN) -> list[Delivery]:
        """The endpoint's last ``most`` deliveries, newest first."""
        keys = self.keys.hook(endpoint_id)
        ids = [text(i) for i in self.client.zrevrange(keys.recent, 0, most - 1)]
        if not ids:
            return []
        records = self.client.hmget(keys.deliveries, ids)
        return [_delivery(i, raw) for i, raw in zip(ids, records, strict=True) if raw]

    def delivery(self, endpoint_id: str, delivery_id: str) -> Delivery | None:
        raw = self.client.hget(self.keys.hook(endpoint_id).deliveries, delivery_id)
        return _delivery(delivery_id, raw) if raw else None

    def figures(self) -> Figures:
        """Every endpoint's counts, added up (for /metrics)."""
        ids = [text(i) for i in self.client.smembers(self.keys.hooks)]
        pipe = self.client.pipeline(transaction=False)
        for endpoint_id in ids:
            pipe.hgetall(self.keys.hook(endpoint_id).stats)
        totals: dict[str, float] = {}
        for stats in pipe.execute() if ids else []:
            for name, value in stats.items():
                totals[text(name)] = totals.get(text(name), 0.0) + float(value)
        running, buckets = 0.0, []
        for bound in [*(f"{b:g}" for b in BOUNDS), "+Inf"]:
            running += totals.get(f"le:{bound}", 0.0)
            buckets.append((bound, running))
        return Figures(
            pending=int(totals.get("pending", 0)),
            delivered=int(totals.get("delivered", 0)),
            failed=int(totals.get("failed", 0)),
            retry=int(totals.get("retry", 0)),
            buckets=buckets,
            seconds=totals.get("seconds", 0.0),
        )

    def keys_of(self, endpoint_id: str) -> HookKeys:
        return self.keys.hook(endpoint_id)


def _endpoint(endpoint_id: str, raw: Mapping[Any, Any], pending: Any) -> Endpoint:
    f = {text(k): text(v) for k, v in raw.items()}
    rooms = f.get("rooms", "")
    return Endpoint(
        id=endpoint_id,
        url=f.get("url", ""),
        events=tuple(orjson.loads(f.get("events") or "[]")),
        rooms=None if not rooms else tuple(orjson.loads(rooms)),
        enabled=f.get("enabled") == "1",
        created=float(f.get("created") or 0),
        disabled_at=float(f["disabled"]) if f.get("disabled") else None,
        failing_since=float(f["failing"]) if f.get("failing") else None,
        secrets=tuple((s, float(until)) for s, until in orjson.loads(f.get("secrets") or "[]")),
        pending=int(pending or 0),
    )


def _delivery(delivery_id: str, raw: Any) -> Delivery:
    d = orjson.loads(raw)
    return Delivery(
        id=delivery_id,
        type=d.get("type", ""),
        room=d.get("room", ""),
        at=float(d.get("at") or 0),
        state=d.get("st", "pending"),
        attempts=int(d.get("n") or 0),
        status=int(d.get("code") or 0),
        error=d.get("err") or "",
        next=float(d["next"]) if d.get("next") else None,
        last=float(d["last"]) if d.get("last") else None,
        body=d.get("body", ""),
        first=float(d["first"]) if d.get("first") else None,
        order=d.get("o", ""),
    )
