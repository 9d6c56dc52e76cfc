"""Group chat kept in Redis sorted sets: people who were away still get what was sent.

The design of "Redis in Action" 6.5.2 (multiple-recipient pull messaging), made
correct. Per chat (hash tag ``{chat:<id>}``): a members zset (member -> highest message
id seen), a messages zset (JSON message -> id) and an id counter. Every change is one
Lua script over those keys only (``webapp/lua/chat_*.lua``), so sends need no lock and
fetch, join and leave cannot interleave half-way. Per user: a seen zset (chat -> highest
id seen) in the user's own slot. It is an index for finding a user's chats, written by
a single command after the chat script; the members zset is the truth.

After a send the chat's ``signal`` channel gets the new id: a wake-up only. A socket
that missed it catches up on its next fetch, because the sorted sets hold everything.
Time (``now``) always comes from the caller.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterable
from typing import Any, NamedTuple

from webapp.redis.keys import ChatKeys, Keys
from webapp.redis.replies import text as _text
from webapp.redis.scripts import Scripts

MAX_TEXT = 2000
MAX_NAME = 40
MAX_ID = 200
HISTORY_CAP = 500
KEEP_RECENT = 50
RATE_LIMIT = 20
RATE_WINDOW = 10.0
IDLE_SECONDS = 2 * 86400


class ChatError(Exception):
    """Base of the chat's refusals; each carries a message for people."""


class InvalidChat(ChatError):
    pass


class InvalidMessage(ChatError):
    pass


class NotMember(ChatError):
    pass


class ChatExists(ChatError):
    pass


class RateLimited(ChatError):
    def __init__(self, limit: int, window: float, retry_after: float) -> None:
        super().__init__(
            f"you are sending too fast: at most {limit} messages every {window:g} seconds;"
            f" try again in {math.ceil(retry_after)} s"
        )
        self.limit, self.window, self.retry_after = limit, window, retry_after


class Message(NamedTuple):
    id: int
    sender: str
    name: str
    text: str
    ts: float  # server time of the send

    @classmethod
    def from_json(cls, raw: str | bytes) -> Message:
        d = json.loads(raw)
        return cls(int(d["id"]), d["sender"], d["name"], d["text"], float(d["ts"]))


class Pending(list[Message]):
    """Messages in id order. ``missed`` counts those the history cap trimmed before
    this member read them (the gap sits right before the first message)."""

    def __init__(self, messages: Iterable[Message] = (), missed: int = 0) -> None:
        super().__init__(messages)
        self.missed = missed
        self.latest = self[-1].id if self else 0


class Joined(NamedTuple):
    history: list[Message]  # recent messages up to seen_id, oldest first
    seen_id: int  # the next fetch brings everything after this id
    latest_id: int
    rejoined: bool  # was already a member (kept their seen id)


def room_chat_id(room: str) -> str:
    """The chat of a waiting room."""
    return f"room:{room}"


def _check_id(what: str, value: str) -> str:
    # ids go into key names inside the {hash tag}: braces would break the tag
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID:
        raise InvalidChat(f"{what} must be 1 to {MAX_ID} characters")
    if "{" in value or "}" in value or not value.isprintable():
        raise InvalidChat(f"{what} must be printable and have no braces")
    return value


def clean_text(raw: object) -> str:
    """The message text to store; InvalidMessage says why it cannot be sent."""
    if not isinstance(raw, str):
        raise InvalidMessage("a message must be text")
    text = raw.replace("\r\n", "\n").strip()
    if not text:
        raise InvalidMessage("an empty message cannot be sent")
    if len(text) > MAX_TEXT:
        raise InvalidMessage(
            f"a message can be at most {MAX_TEXT:,} characters; this one has {len(text):,}"
        )
    return text


class Chats:
    """Every chat. Thread-safe: share one per process."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        scripts: Scripts,
        history_cap: int = HISTORY_CAP,
        keep_recent: int = KEEP_RECENT,
        rate_limit: int = RATE_LIMIT,
        rate_window: float = RATE_WINDOW,
        idle_seconds: int = IDLE_SECONDS,
    ) -> None:
        if not 0 <= keep_recent <= history_cap:
            raise ValueError("keep_recent must be between 0 and history_cap")
        self.client = client
        self.keys = keys
        self.scripts = scripts
        self.history_cap = history_cap
        self.keep_recent = keep_recent
        self.rate_limit = rate_limit
        self.rate_window = rate_window
        self.idle_seconds = idle_seconds

    def _keys(self, chat_id: str) -> ChatKeys:
        return self.keys.chat(_check_id("chat id", chat_id))

    def _run(self, script: str, chat_id: str, *args: Any) -> Any:
        return self.scripts[script](keys=self._keys(chat_id).named(), args=list(args))

    # -- membership ----------------------------------------------------------

    def create(self, chat_id: str, members: Iterable[str], now: float, kind: str = "group") -> None:
        """Starts a group chat with these members; ChatExists if the id is taken."""
        people = [_check_id("member id", m) for m in dict.fromkeys(members)]
        if not people:
            raise InvalidChat("a chat needs at least one member")
        code, latest = self._run(
            "chat_create", chat_id, repr(now), kind, self.idle_seconds, *people
        )
        if _text(code) == "exists":
            raise ChatExists(f"there is already a chat {chat_id!r}")
        pipe = self.client.pipeline(transaction=False)
        for member in people:
            self._index(pipe, member, chat_id, int(latest))
        pipe.execute()

    def join(
        self, chat_id: str, member: str, now: float, history: int = 20, kind: str = "room"
    ) -> Joined:
        """Adds the member at the latest message (creating the chat if needed).

        A member who is already in keeps their seen id: a reconnect loses nothing.
        ``history`` recent messages up to the seen id come back for context; at most
        ``keep_recent`` are kept once everyone has read them.
        """
        _check_id("member id", member)
        reply = self._run(
            "chat_join", chat_id, member, repr(now), kind, max(history, 0), self.idle_seconds
        )
        seen, latest, rejoined = int(reply[0]), int(reply[1]), bool(int(reply[2]))
        self._index(self.client, member, chat_id, seen)
        return Joined([Message.from_json(m) for m in reply[3:]], seen, latest, rejoined)

    def leave(self, chat_id: str, member: str) -> int:
        """Takes the member out; returns how many are left (0: the chat is deleted)."""
        _check_id("member id", member)
        _code, left = self._run("chat_leave", chat_id, member, self.keep_recent, self.idle_seconds)
        self.client.zrem(self.keys.user_seen(member), chat_id)
        return int(left)

    def members(self, chat_id: str) -> dict[str, int]:
        """Each member and the highest message id they have seen."""
        raw = self.client.zrange(self._keys(chat_id).members, 0, -1, withscores=True)
        return {_text(m): int(s) for m, s in raw}

    def latest_id(self, chat_id: str) -> int:
        """The id of the newest message ever sent in the chat (0: none yet)."""
        return int(self.client.get(self._keys(chat_id).ids) or 0)

    def chats_of(self, member: str) -> dict[str, int]:
        """The member's seen index: chat id -> highest id seen (may lag the truth)."""
        raw = self.client.zrange(self.keys.user_seen(member), 0, -1, withscores=True)
        return {_text(c): int(s) for c, s in raw}

    def signal_channel(self, chat_id: str) -> str:
        """The pub/sub channel that wakes a chat's sockets after each send."""
        return self._keys(chat_id).signal

    # -- messages ------------------------------------------------------------

    def send(
        self, chat_id: str, sender_id: str, sender_name: str, text: object, now: float
    ) -> Message:
        """Stores a message under the next id and wakes the chat's sockets.

        InvalidMessage for empty or over-long text, RateLimited past ``rate_limit``
        sends per ``rate_window`` seconds, NotMember for a sender outside the chat.
        """
        _check_id("sender id", sender_id)
        keys = self._keys(chat_id)
        body = clean_text(text)
        name = " ".join("".join(c for c in str(sender_name) if c.isprintable()).split())
        name = name[:MAX_NAME]
        entry = f"{now!r}:{secrets.token_hex(6)}"
        allowed, retry = self.scripts["chat_rate"](
            keys={"send_rate": self.keys.send_rate(sender_id)},
            args=[repr(now), self.rate_window, self.rate_limit, entry],
        )
        if not int(allowed):
            raise RateLimited(self.rate_limit, self.rate_window, float(retry))
        doc = json.dumps(
            {"sender": sender_id, "name": name, "text": body, "ts": now},
            separators=(",", ":"),
            ensure_ascii=False,
        )
        code, new_id = self.scripts["chat_send"](
            keys=keys.named(), args=[sender_id, doc[1:], self.history_cap, self.idle_seconds]
        )
        if _text(code) != "ok":
            # a refused send does not count against the sender's rate
            self.client.zrem(self.keys.send_rate(sender_id), entry)
            raise NotMember("you are not in this chat")
        self.client.publish(keys.signal, str(new_id))
        return Message(int(new_id), sender_id, name, body, now)

    def fetch(self, chat_id: str, member: str) -> Pending:
        """Every message after the member's seen id, in id order; seen moves forward.

        NotMember if the member is not (or no longer) in the chat.
        """
        reply = self._fetch_script(chat_id, member)
        if _text(reply[0]) != "ok":
            self.client.zrem(self.keys.user_seen(member), chat_id)
            raise NotMember("you are not in this chat")
        before, after, missed = int(reply[1]), int(reply[2]), int(reply[3])
        if after > before:
            self._record_seen(member, chat_id, after)
        return Pending((Message.from_json(m) for m in reply[4:]), missed)

    def read(self, chat_id: str, after: int, limit: int = HISTORY_CAP) -> Pending:
        """The messages after id ``after`` (at most ``limit``), changing nothing.

        For live delivery, where each socket keeps its own cursor; ``missed`` counts
        those the history cap trimmed. ``Pending.latest`` is the newest id: below
        ``after`` means the chat was deleted and started again.
        """
        reply = self._run("chat_read", chat_id, max(int(after), 0), limit)
        pending = Pending((Message.from_json(m) for m in reply[2:]), int(reply[1]))
        pending.latest = int(reply[0])
        return pending

    def ack(self, chat_id: str, member: str, upto: int) -> int:
        """The member has been shown everything up to ``upto``: their seen id moves
        there (never backward) and what all have seen is cleaned up. Returns the seen
        id; NotMember if they are not (or no longer) in the chat."""
        _check_id("member id", member)
        code, seen = self._run(
            "chat_ack", chat_id, member, int(upto), self.keep_recent, self.idle_seconds
        )
        if _text(code) != "ok":
            raise NotMember("you are not in this chat")
        self._record_seen(member, chat_id, int(seen))
        return int(seen)

    def _fetch_script(self, chat_id: str, member: str) -> Any:
        _check_id("member id", member)
        return self._run("chat_fetch", chat_id, member, self.keep_recent, self.idle_seconds)

    def _record_seen(self, member: str, chat_id: str, seen: int) -> None:
        # XX: never re-adds a chat the member left meanwhile; GT: an overlapping fetch
        # that finishes late cannot move the index backward.
        key = self.keys.user_seen(member)
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(key, {chat_id: seen}, xx=True, gt=True)
        pipe.expire(key, self.idle_seconds)
        pipe.execute()

    def _index(self, client: Any, member: str, chat_id: str, seen: int) -> None:
        key = self.keys.user_seen(member)
        # GT: a fetch that moved the index on meanwhile is not undone
        client.zadd(key, {chat_id: seen}, gt=True)
        client.expire(key, self.idle_seconds)
