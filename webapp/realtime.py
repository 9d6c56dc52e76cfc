"""Fan-out of small JSON messages to the websockets of every process, through Redis.

A websocket lives in one gunicorn worker, but what it must hear about (a seat taken in
another worker, a chat message) happens anywhere. Each process runs one ``Hub``: one
pub/sub connection on one pattern, read by one listener thread that hands each message
to the callbacks subscribed to its topic in this process. No Flask here.

    hub = Hub(client, prefix="wr")
    cancel = hub.subscribe("room:lobby", on_message)   # on_message(dict) -> None
    hub.publish("room:lobby", {"type": "room.changed"})
    cancel()

Callbacks run on the listener thread, one after another: they must be quick and must
not block for long (a socket send of a small frame is fine).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

Callback = Callable[[dict[str, Any]], None]


class Hub:
    def __init__(self, client: Any, prefix: str, retry: float = 1.0) -> None:
        self.client = client
        self.pattern = f"{prefix}:hub:"
        self.retry = retry
        self._subscribers: dict[str, list[Callback]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def channel(self, topic: str) -> str:
        return self.pattern + topic

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

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """Whether the listener is subscribed (tests wait for this before publishing)."""
        return self._ready.wait(timeout)

    def close(self) -> None:
        self._stop.set()

    def _listen(self) -> None:
        # One pattern for everything: subscribing per topic would mean calling the
        # pub/sub object from request threads, and it is not thread-safe.
        while not self._stop.is_set():
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.psubscribe(self.pattern + "*")
                self._ready.set()
                while not self._stop.is_set():
                    item = pubsub.get_message(timeout=1.0)
                    if item is not None:
                        self._dispatch(item)
            except Exception:  # Redis restarted or the network blinked: subscribe again
                log.exception("hub listener lost Redis; retrying in %.1fs", self.retry)
                self._ready.clear()
                self._stop.wait(self.retry)
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
