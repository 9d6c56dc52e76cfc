"""Every Redis key name the app uses is built here, and nowhere else.

All of one room's keys carry the hash tag ``{room:<name>}`` so that one Lua script can
touch them together on Redis Cluster. All of one chat's keys carry ``{chat:<id>}``.
A user's keys carry ``{user:<id>}``. Global keys have no tag and are touched by
single-key commands only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class RoomKeys:
    """The keys of one room; they all hash to the same cluster slot."""

    settings: str  # hash: capacity, dropout_seconds, ... status
    seq: str  # string counter: the line's order, one number per joiner
    line: str  # zset: waiting ticket -> sequence number (line order)
    checkin: str  # zset: waiting ticket -> time it drops out unless it checks in
    seats: str  # zset: seated ticket -> time the seat is given up unless renewed
    tickets: str  # hash: ticket -> JSON record (state, name, identity, times)
    identities: str  # hash: identity (visitor id / idempotency key) -> live ticket
    ended: str  # zset: ended ticket -> time it ended (kept a while to answer 410)
    stats: str  # hash: time-decayed event statistics for wait estimates
    clock: str  # hash: the lease clock (seen, skipped): outages skipped on deadlines
    audit: str  # stream: admin actions and admissions (who, what, when, why), capped
    codes: str  # hash: support code -> ticket (an admin finds a visitor by it)
    history: str  # hash: "<minute>:<figure>" -> count or sample, for charts (a day kept)
    predictions: str  # hash: waiting ticket -> "wait,low,high[,model wait,sd]" at its join
    accuracy: str  # stream: predicted against actual wait of each admission, capped
    outbox: str  # stream: notices to email (the mailer's; WaitlistKeys.outbox, same key)
    events: str  # stream: what happened, for the webhooks (events_lib.lua), capped

    def named(self) -> dict[str, str]:
        """Every key of the room by its name, the name the Lua scripts declare it by
        (``--!keys``, ``webapp/redis/scripts.py``)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def all(self) -> list[str]:
        """Every one of these keys (to delete them, or look at their TTLs)."""
        return list(self.named().values())


@dataclass(frozen=True)
class WaitlistKeys:
    """The keys of a waitlist room's entries (``kind`` waitlist), beside its RoomKeys and
    under the same hash tag. They have no TTL: a waitlist lives for weeks, so they are
    kept until the room is deleted (``WaitingRooms.delete``), each bounded by the number
    of entries (one per email)."""

    entries: str  # hash: entry id -> JSON record (name, email, referral, points, state)
    line: str  # zset: waiting entry -> order score (confirmed or not: the position)
    ready: str  # zset: confirmed waiting entry -> the same score (what admission takes)
    seq: str  # string counter: join order, one number per entry
    emails: str  # hash: email key (normalised) -> entry id (one entry per mailbox)
    codes: str  # hash: referral code -> entry id
    admitted: str  # zset: admitted entry -> time admitted
    held: str  # zset: referee entry whose boost is held for review -> time held
    addresses: str  # hash: hashed address -> entries joined from it
    meta: str  # hash: the draw (commitment, seed, state, times) and the schedule's period
    drawn: str  # list: the entries of the lottery draw (its participants), to verify it
    outbox: str  # stream: one message per notice (kind, entry, email, name, lang, at)
    unclaimed: str  # zset: admitted entry not yet claimed -> its claim deadline
    referees: str  # zset, every score 0: "referrer id:referee id" (a referrer's referees)

    def named(self) -> dict[str, str]:
        """Every waitlist key by the name the scripts declare it by: ``wl_<field>``
        (its outbox is the room's, ``outbox``)."""
        return {
            f"wl_{field.name}": getattr(self, field.name)
            for field in fields(self)
            if field.name != "outbox"
        }

    def all(self) -> list[str]:
        """Every one of these keys (to delete them, or look at their TTLs)."""
        return list(self.named().values())


@dataclass(frozen=True)
class DropKeys:
    """A scheduled drop's keys (webapp/domain/drops.py, drop_lib.lua), beside the room's
    and under its hash tag, passed to the scripts by name beside the room's."""

    drop: str  # hash: the draw (state, commitment, seed, times, entries) and stock counts
    prequeue: str  # zset: pre-queued ticket -> when it joined
    drawn: str  # list: the draw ids in drawn order (the public record)
    pool: str  # set: scratch for the seed's Redis-side randomness (deleted in the script)

    def named(self) -> dict[str, str]:
        """The drop's keys by the names the scripts declare them by: ``drop`` and
        ``drop_<field>``."""
        return {
            field.name if field.name == "drop" else f"drop_{field.name}": getattr(self, field.name)
            for field in fields(self)
        }

    def all(self) -> list[str]:
        """Every one of these keys (to delete them, or look at their TTLs)."""
        return list(self.named().values())


@dataclass(frozen=True)
class ChatKeys:
    """The keys of one chat (a room's chat or a small group chat)."""

    members: str  # zset: member -> highest message id that member has seen
    messages: str  # zset: JSON message -> its id
    ids: str  # string counter: last message id handed out
    meta: str  # hash: chat-level facts (created, kind)
    signal: str  # the hub channel of topic "chat:<id>": wake-ups, never the data itself

    def named(self) -> dict[str, str]:
        """The chat's stored keys by the names the chat scripts declare them by."""
        stored = (field.name for field in fields(self) if field.name != "signal")
        return {name: getattr(self, name) for name in stored}

    def all(self) -> list[str]:
        """Every one of these keys (to delete them, or look at their TTLs)."""
        return list(self.named().values())


@dataclass(frozen=True)
class HookKeys:
    """The keys of one webhook endpoint; they share the hash tag ``{hook:<id>}``, so the
    delivery scripts (``hook_*.lua``) touch them together on Redis Cluster."""

    endpoint: str  # hash: url, events, rooms, enabled, secrets, created, failing, disabled
    deliveries: str  # hash: webhook-id -> JSON delivery (body, state, attempts, response)
    queue: str  # zset: webhook-id -> when its next attempt is due (a sending one: its lease)
    order: str  # hash: ticket -> its undelivered webhook-ids, oldest first (one at a time)
    recent: str  # zset: webhook-id -> when its event happened (the panel's last ones)
    stats: str  # hash: pending, delivered, failed, retry, and the delivery time histogram

    def named(self) -> dict[str, str]:
        """The keys by the names the hook scripts declare them by."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def all(self) -> list[str]:
        """Every one of these keys (to delete them)."""
        return list(self.named().values())


@dataclass(frozen=True)
class Keys:
    """Builds key names under one prefix (``WEBAPP_REDIS_PREFIX``, default ``wr``)."""

    prefix: str = "wr"

    def room(self, name: str) -> RoomKeys:
        base = f"{self.prefix}:{{room:{name}}}"
        return RoomKeys(
            settings=f"{base}:settings",
            seq=f"{base}:seq",
            line=f"{base}:line",
            checkin=f"{base}:checkin",
            seats=f"{base}:seats",
            tickets=f"{base}:tickets",
            identities=f"{base}:identities",
            ended=f"{base}:ended",
            stats=f"{base}:stats",
            clock=f"{base}:clock",
            audit=f"{base}:audit",
            codes=f"{base}:codes",
            history=f"{base}:history",
            predictions=f"{base}:predictions",
            accuracy=f"{base}:accuracy",
            outbox=f"{base}:outbox",
            events=f"{base}:events",
        )

    def waitlist(self, name: str) -> WaitlistKeys:
        base = f"{self.prefix}:{{room:{name}}}"
        return WaitlistKeys(
            entries=f"{base}:wl:entries",
            line=f"{base}:wl:line",
            ready=f"{base}:wl:ready",
            seq=f"{base}:wl:seq",
            emails=f"{base}:wl:emails",
            codes=f"{base}:wl:codes",
            admitted=f"{base}:wl:admitted",
            held=f"{base}:wl:held",
            addresses=f"{base}:wl:addresses",
            meta=f"{base}:wl:meta",
            drawn=f"{base}:wl:drawn",
            outbox=f"{base}:outbox",
            unclaimed=f"{base}:wl:unclaimed",
            referees=f"{base}:wl:referees",
        )

    def drop(self, name: str) -> DropKeys:
        base = f"{self.prefix}:{{room:{name}}}"
        return DropKeys(
            drop=f"{base}:drop",
            prequeue=f"{base}:drop:prequeue",
            drawn=f"{base}:drop:drawn",
            pool=f"{base}:drop:pool",
        )

    def prequeue_entries(self, room: str, per: str) -> str:
        """hash: address (``per`` address) or network (``per`` network) -> entries it
        made in the drop's pre-queue (``webapp.domain.drops.PrequeueCaps``); TTL past
        the drop's start."""
        return f"{self.prefix}:{{room:{room}}}:drop:prequeue-{per}"

    def stock_request(self, room: str, request_id: str) -> str:
        """A stock report's request id was counted (its replay answers the same)."""
        return f"{self.prefix}:{{room:{room}}}:stock:{request_id}"

    def admit_request(self, room: str, request_id: str) -> str:
        """string, a day: what an admin admission with this request id admitted."""
        return f"{self.prefix}:{{room:{room}}}:admit:{request_id}"

    def deliveries(self, room: str) -> str:
        """hash, kept with the room: "<entry>:<kind>" -> JSON delivery status of one
        notice (sending, retry, sent, failed; attempts, worker, Message-ID, last error),
        for the mailer's idempotency and the panel. One field per notice ever sent."""
        return f"{self.prefix}:{{room:{room}}}:mail"

    def hook(self, endpoint_id: str) -> HookKeys:
        base = f"{self.prefix}:{{hook:{endpoint_id}}}"
        return HookKeys(
            endpoint=f"{base}:endpoint",
            deliveries=f"{base}:deliveries",
            queue=f"{base}:queue",
            order=f"{base}:order",
            recent=f"{base}:recent",
            stats=f"{base}:stats",
        )

    @property
    def hooks(self) -> str:
        """set: the webhook endpoints' ids (an index; each endpoint's own hash is the
        truth)."""
        return f"{self.prefix}:hooks"

    def site_keys(self, room: str) -> str:
        """hash, kept with the room: site key id -> JSON {hash (SHA-256 of the key), label,
        created}; a few fields at most (``webapp.domain.site_keys.MAX_LIVE``)."""
        return f"{self.prefix}:{{room:{room}}}:site-keys"

    def identity_used(self, room: str, digest: str) -> str:
        """string: an identity token (by the SHA-256 of its jti) was used for a join of
        the room; TTL until the token expires (at most ten minutes: domain/identity.py)."""
        return f"{self.prefix}:{{room:{room}}}:identity-used:{digest}"

    def move_used(self, room: str, link_id: str) -> str:
        """string: a move-to-another-device link taken (single use); TTL its lifetime."""
        return f"{self.prefix}:{{room:{room}}}:move:used:{link_id}"

    def move_holder(self, room: str, token: str) -> str:
        """string: the browser a moved ticket belongs to now; TTL a day (Moves)."""
        return f"{self.prefix}:{{room:{room}}}:move:holder:{token}"

    def claims(self, room: str) -> str:
        """hash, kept with the room: admitted waitlist entry -> when its claim link was
        used (one field per admitted entry at most)."""
        return f"{self.prefix}:{{room:{room}}}:wl:claimed"

    def chat(self, chat_id: str) -> ChatKeys:
        base = f"{self.prefix}:{{chat:{chat_id}}}"
        return ChatKeys(
            members=f"{base}:members",
            messages=f"{base}:messages",
            ids=f"{base}:ids",
            meta=f"{base}:meta",
            signal=self.hub_channel(self.chat_topic(chat_id)),
        )

    def user_seen(self, user_id: str) -> str:
        """zset: chat id -> highest message id this user has seen there."""
        return f"{self.prefix}:{{user:{user_id}}}:seen"

    def user_connections(self, user_id: str) -> str:
        """hash: server id -> open websockets of this user on that server."""
        return f"{self.prefix}:{{user:{user_id}}}:conns"

    def user_connection_deadlines(self, user_id: str) -> str:
        """zset: server id -> time its entry in ``user_connections`` stops counting."""
        return f"{self.prefix}:{{user:{user_id}}}:conn-deadlines"

    def server_alive(self, process: str) -> str:
        """string with the connection TTL, renewed by the heartbeat of the server running
        as ``process`` (``host:pid``): its server id. Deleted by gunicorn's master when
        that worker exits, so its sockets stop counting at once (``ConnectionLimits``)."""
        return f"{self.prefix}:server:{process}:alive"

    def send_rate(self, user_id: str) -> str:
        """zset of recent send times, for the chat rate limit."""
        return f"{self.prefix}:{{user:{user_id}}}:sends"

    @staticmethod
    def room_topic(room: str) -> str:
        """The hub topic of a room's sockets: state frames and what Visits tells them."""
        return f"room:{room}"

    @staticmethod
    def chat_topic(chat_id: str) -> str:
        """The hub topic that wakes a chat's sockets after each send."""
        return f"chat:{chat_id}"

    def hub_channel(self, topic: str) -> str:
        """The pub/sub channel of a hub topic (``webapp.live.realtime.Hub``)."""
        return f"{self.hub_prefix}{topic}"

    @property
    def hub_prefix(self) -> str:
        """Every hub channel starts with this; the hub listens on it with one pattern."""
        return f"{self.prefix}:hub:"

    @property
    def rooms(self) -> str:
        """set of room names (an index; each room's own keys are the truth)."""
        return f"{self.prefix}:rooms"

    @property
    def revoked_passes(self) -> str:
        """zset: "<room> <seat's public id>" -> until when its passes are refused (the
        seat ended; ``webapp.domain.seat_passes.Revocations``); trimmed at each write to
        those in force, so it holds only seats ended within a pass's lifetime."""
        return f"{self.prefix}:passes:revoked"

    @property
    def sweep_lock(self) -> str:
        """string with a short TTL: one process sweeps the rooms per interval."""
        return f"{self.prefix}:sweep-lock"

    @property
    def limits(self) -> str:
        """The prefix of flask-limiter's keys (wrong admin credentials per address)."""
        return f"{self.prefix}:limits"

    def challenge_used(self, room: str, challenge: str) -> str:
        """string with a TTL until the challenge expires: its solution was used for a join
        of this room (``webapp.domain.challenge``: each counts once; a challenge is
        named by its signature)."""
        return f"{self.prefix}:{{room:{room}}}:altcha:{challenge}"

    def join_limit(self, room: str, scope: str, who: str, window: int) -> str:
        """hash, bucket number -> joins of ``who`` (an address or a network) into
        ``room`` under ``scope`` in that bucket of a limit of ``window`` seconds; TTL, a
        window and a bucket. Hash tag: the room's, so the join's own script counts them
        (``webapp.domain.join_limits``: every room counts its joins apart)."""
        return f"{self.prefix}:{{room:{room}}}:joins:{scope}:{who}:{window}"

    def mail_budget(self, mailbox: str, window: int) -> str:
        """string, a counter with a TTL of the window: emails sent to one mailbox (its
        hash) in the window numbered ``window`` (``webapp.domain.budgets``)."""
        return f"{self.prefix}:mailto:{mailbox}:{window}"

    @property
    def mail_health(self) -> str:
        """string (JSON) with a TTL: the mailer's last check of its SMTP server (ok, the
        server, the error, when); gone when no mailer has checked lately."""
        return f"{self.prefix}:mail-health"

    @property
    def admins(self) -> str:
        """hash: admin name -> argon2 hash of the password (the panel's accounts)."""
        return f"{self.prefix}:admins"

    @property
    def admins_ensure(self) -> str:
        """string with a short TTL: one process is setting WEBAPP_ADMIN_PASSWORD's account
        (gunicorn's workers start together; the first does it, once)."""
        return f"{self.prefix}:admins:ensure"

    def admin_session(self, digest: str) -> str:
        """string (JSON) with a TTL of the idle timeout: one logged-in panel session,
        named by the SHA-256 of its cookie's token (the token itself is never stored)."""
        return f"{self.prefix}:admin-session:{digest}"
