"""Background work repeated on an interval, in a daemon thread (a greenlet under gevent)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def run_every(interval: float, work: Callable[[], object], name: str) -> threading.Event:
    """Calls ``work()`` every ``interval`` seconds until the returned event is set.
    A failing call is logged and the next one runs as usual (Redis may blink)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            try:
                work()
            except Exception:
                log.exception("%s failed; trying again in %.1fs", name, interval)

    threading.Thread(target=loop, name=name, daemon=True).start()
    return stop
