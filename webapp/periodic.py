"""Background work repeated on an interval, in a daemon thread (a greenlet under gevent)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


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


def off_the_loop(work: Callable[[], T]) -> T:
    """``work()``, run in a native thread when gevent has patched this process: a
    password hash (argon2 releases the GIL) then holds one thread, not every greenlet
    of the worker (about 145 ms per login otherwise). Elsewhere, a plain call."""
    try:
        from gevent import get_hub, monkey
    except ImportError:  # pragma: no cover - gevent is a dependency
        return work()
    if not monkey.is_module_patched("threading"):
        return work()
    result: T = get_hub().threadpool.apply(work)
    return result
