"""Fan-out of small JSON messages to the websockets of every process, through Redis.

A websocket lives in one gunicorn worker, but what it must hear about (a seat taken in
another worker, a chat message) happens anywhere. Each process runs one ``Hub``: one
pub/sub connection on one pattern, read by one listener thread that hands each message
to the callbacks subscribed to its topic in this process. No Flask here.

    hub = Hub(client, Keys("wr"))
    cancel = hub.subscribe("room:lobby", on_message)   # on_message(dict) -> None
    hub.publish("room:lobby", {"type": "room.changed"})
    cancel()

Callbacks run on the listener thread, one after another: they must be quick and must
not block for long (a socket send of a small frame is fine).

``RoomRelay`` sits on top: it subscribes once per room that has sockets in this
process, forwards every frame published on ``room:<room>`` to them, and answers the
signal ``{"type": "room.changed"}`` with one fresh state frame per room (coalesced: at
most one every ``min_gap`` seconds, however many seats change in a burst). The signal is
throttled where it starts too: a rush of joins in one process sends a few a second, not
one a join. It keeps the latest state it read of each room with local sockets, so the
sockets' periodic refreshes share one read (``recent_state``) instead of each reading
the whole room: with a thousand seated, one read is a thousand ticket records.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from webapp.domain.reports import Reports
from webapp.domain.rooms import RoomNotFound, public_id
from webapp.infra.periodic import Streak
from webapp.redis.keys import Keys

log = logging.getLogger(__name__)

Callback = Callable[[dict[str, Any]], None]
T = TypeVar("T")


class Hub:
    def __init__(self, client: Any, keys: Keys, retry: float = 1.0) -> None:
        self.client = client
        self.keys = keys
        self.pattern = keys.hub_prefix
        self.retry = retry
        self._subscribers: dict[str, list[Callback]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._on_ready: list[Callable[[], None]] = []

    def channel(self, topic: str) -> str:
        return self.keys.hub_channel(topic)

    def publish(self, topic: str, message: Mapping[str, Any]) -> None:
        """Sends ``message`` to every subscriber of ``topic`` in every process."""
        self.client.publish(self.channel(topic), json.dumps(message, separators=(",", ":")))

    def subscribe(self, topic: str, callback: Callback) -> Callable[[], None]:
        """Calls ``callback(message)`` for each message on ``topic``; returns a cancel."""
        with self._lock:
            self._subscribers.setdefault(topic, []).append(callback)
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, name="hub", daemon=True)
                self._thread.start()

        def cancel() -> None:
            with self._lock:
                callbacks = self._subscribers.get(topic, [])
                if callback in callbacks:
                    callbacks.remove(callback)
                if not callbacks:
                    self._subscribers.pop(topic, None)

        return cancel

    def subscribers(self, topic: str) -> int:
        with self._lock:
            return len(self._subscribers.get(topic, ()))

    def when_ready(self, callback: Callable[[], None]) -> None:
        """Calls ``callback()`` on the listener thread each time it has (re)subscribed:
        what was published while it was not listening is lost, so a subscriber that
        must not miss anything reads the state it keeps from Redis there."""
        with self._lock:
            self._on_ready.append(callback)

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """Whether the listener is subscribed (tests wait for this before publishing)."""
        return self._ready.wait(timeout)

    def close(self) -> None:
        self._stop.set()

    def _listen(self) -> None:
        # One pattern for everything: subscribing per topic would mean calling the
        # pub/sub object from request threads, and it is not thread-safe.
        streak = Streak("hub listener", log)  # an outage said once each way, not every retry
        while not self._stop.is_set():
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.psubscribe(self.pattern + "*")
                self._ready.set()
                for callback in list(self._on_ready):
                    callback()
                streak.worked()
                while not self._stop.is_set():
                    item = pubsub.get_message(timeout=1.0)
                    if item is not None:
                        self._dispatch(item)
            except Exception as error:  # Redis restarted or the network blinked: again
                self._ready.clear()
                if self._stop.is_set():
                    return  # the process is stopping: nothing was lost
                streak.failed(error)
                self._stop.wait(self.retry)
            except (KeyboardInterrupt, SystemExit):  # Ctrl+C reached this thread: stop
                self._stop.set()
                return
            finally:
                try:
                    pubsub.close()
                except Exception:
                    log.debug("closing a broken pub/sub connection failed", exc_info=True)

    def _dispatch(self, item: Mapping[str, Any]) -> None:
        channel = item.get("channel")
        if isinstance(channel, bytes):
            channel = channel.decode()
        if not isinstance(channel, str) or not channel.startswith(self.pattern):
            return
        topic = channel[len(self.pattern) :]
        with self._lock:
            callbacks = list(self._subscribers.get(topic, ()))
        if not callbacks:
            return
        try:
            message = json.loads(item["data"])
        except (TypeError, ValueError):
            log.warning("hub dropped a message that is not JSON on %s", channel)
            return
        for callback in callbacks:
            try:
                callback(message)
            except Exception:
                log.exception("hub subscriber of %s failed", topic)


class Fanout(Generic[T]):
    """This process's local listeners per key, with one hub subscription per key: the
    key's topic is subscribed when its first listener arrives and dropped with its last.
    ``heard(key, message)`` is called (on the hub's thread) for each message."""

    def __init__(
        self,
        hub: Hub,
        topic: Callable[[str], str],
        heard: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self.hub = hub
        self.topic = topic
        self.heard = heard
        self._members: dict[str, set[T]] = {}
        self._cancels: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()

    def add(self, key: str, member: T) -> None:
        with self._lock:
            members = self._members.setdefault(key, set())
            members.add(member)
            first = len(members) == 1
        if first:
            cancel = self.hub.subscribe(self.topic(key), lambda m: self.heard(key, m))
            with self._lock:
                self._cancels[key] = cancel

    def remove(self, key: str, member: T) -> bool:
        """Takes the member out; True if it was the key's last one here."""
        cancel = None
        with self._lock:
            members = self._members.get(key, set())
            members.discard(member)
            if not members:
                self._members.pop(key, None)
                cancel = self._cancels.pop(key, None)
        if cancel is not None:
            cancel()
        return cancel is not None

    def members(self, key: str) -> list[T]:
        with self._lock:
            return list(self._members.get(key, ()))

    def active(self) -> list[str]:
        """The keys that have listeners in this process."""
        with self._lock:
            return list(self._members)


class Socket(Protocol):
    """What the relay needs of a connection: its room, and a send that never raises."""

    room: str

    def send(self, frame: dict[str, Any]) -> bool: ...


class Throttle:
    """``throttle(key)`` calls ``act(key)`` at most once per ``gap`` seconds per key: at
    once when the key's last act is ``gap`` or more ago, otherwise once at the end of
    the gap for however many calls came meanwhile (so ``act`` must cover them all: it
    reads or tells the latest). An act at once raises to its caller; one at the end of
    a gap has no caller left, so its failure is logged."""

    def __init__(self, act: Callable[[str], None], gap: float) -> None:
        self.act = act
        self.gap = gap
        self._last: dict[str, float] = {}  # key -> when it was last acted on
        self._due: set[str] = set()  # keys with an act due at the end of the gap
        self._lock = threading.Lock()

    def __call__(self, key: str) -> None:
        now = time.monotonic()
        with self._lock:
            if key in self._due:
                return  # the act due at the end of the gap will cover this call
            wait = self._last.get(key, now - self.gap) + self.gap - now
            if wait > 0:
                self._due.add(key)
            else:
                if len(self._last) >= 1024:  # keys long quiet: forget them
                    for quiet in [k for k, at in self._last.items() if now - at > self.gap]:
                        del self._last[quiet]
                self._last[key] = now
        if wait <= 0:
            self.act(key)
            return
        timer = threading.Timer(wait, self._act_later, args=(key,))
        timer.daemon = True
        timer.start()

    def forget(self, key: str) -> None:
        with self._lock:
            self._last.pop(key, None)

    def _act_later(self, key: str) -> None:
        with self._lock:
            self._due.discard(key)
            self._last[key] = time.monotonic()
        try:
            self.act(key)
        except Exception:
            log.exception("%s of %s failed", getattr(self.act, "__name__", "act"), key)


class RoomRelay:
    """This process's room sockets, fed from the hub topic ``room:<room>``."""

    CHANGED = "room.changed"

    def __init__(
        self,
        hub: Hub,
        state: Callable[[str], dict[str, Any]],
        min_gap: float = 0.5,
        signal_gap: float = 0.1,
    ) -> None:
        self.hub = hub
        self.state = state  # room -> the frame that shows it (one Redis read)
        self._sockets: Fanout[Socket] = Fanout(hub, hub.keys.room_topic, self._heard)
        self._states: dict[str, tuple[float, dict[str, Any]]] = {}  # room -> (read at, frame)
        self._lock = threading.Lock()
        # Both ends of "changed" are throttled per room: the signals this process sends,
        # and the fresh states it sends its sockets on hearing one
        self._signals = Throttle(self._signal, signal_gap)
        self._resends = Throttle(self._resend, min_gap)

    def publish(self, room: str, frame: Mapping[str, Any]) -> None:
        """Sends a frame to every socket of the room, in every process."""
        self.hub.publish(self.hub.keys.room_topic(room), frame)

    def changed(self, room: str) -> None:
        """Signals that who holds a seat changed: each process resends the state. The
        first change in ``signal_gap`` seconds is signalled before this returns; those
        that follow in the gap share one signal sent at its end (each listener rereads
        the state, so one signal says it for all)."""
        self._signals(room)

    def _signal(self, room: str) -> None:
        self.hub.publish(self.hub.keys.room_topic(room), {"type": self.CHANGED})

    def attach(self, sock: Socket) -> None:
        self._sockets.add(sock.room, sock)

    def detach(self, sock: Socket) -> None:
        if self._sockets.remove(sock.room, sock):
            self._resends.forget(sock.room)
            with self._lock:
                self._states.pop(sock.room, None)

    def fresh_state(self, room: str) -> dict[str, Any]:
        """The room's state frame read now; kept for ``recent_state``. The same object
        goes to every socket it is sent to (``ws.Connection`` encodes it once)."""
        frame = self.state(room)
        with self._lock:
            if self._sockets.members(room):  # only rooms with local sockets are kept
                self._states[room] = (time.monotonic(), frame)
        return frame

    def recent_state(self, room: str, max_age: float) -> dict[str, Any]:
        """The room's state frame, read at most ``max_age`` seconds ago."""
        with self._lock:
            kept = self._states.get(room)
        if kept is not None and time.monotonic() - kept[0] <= max_age:
            return kept[1]
        return self.fresh_state(room)

    def local(self, room: str) -> list[Socket]:
        return self._sockets.members(room)

    def _heard(self, room: str, message: dict[str, Any]) -> None:
        if message.get("type") != self.CHANGED:
            self._fan_out(room, message)
            return
        self._resends(room)

    def _resend(self, room: str) -> None:
        if not self.local(room):
            return
        try:
            frame = self.fresh_state(room)
        except Exception:
            log.exception("room state of %s could not be read", room)
            return
        self._fan_out(room, frame)

    def _fan_out(self, room: str, frame: dict[str, Any]) -> None:
        for sock in self.local(room):
            sock.send(frame)


# People named in a room.state frame: the first seated. Every change of seats sends the
# frame to every socket of the room, so its size times the sockets is what a change
# costs: with a thousand seated and all named, some 50 MB per change for each process,
# which starved the check-ins of the line (docs/performance.md). ``active`` counts all.
PARTICIPANTS_SHOWN = 100


def room_state(reports: Reports, room: str) -> dict[str, Any]:
    """The room as its page and its sockets show it: a ``room.state`` frame naming the
    first ``PARTICIPANTS_SHOWN`` people seated."""
    summary = reports.summary(room)
    if summary is None:
        raise RoomNotFound(f"no room named {room!r}")
    people = [
        {"id": public_id(p.token), "name": p.name or "Guest", "since": p.since}
        for p in reports.participants(room)[:PARTICIPANTS_SHOWN]
    ]
    return {
        "type": "room.state",
        "room": room,
        "capacity": summary.capacity,
        "active": summary.active,
        "waiting": summary.waiting,
        "status": summary.status,
        "notice": summary.notice,
        "participants": people,
    }
