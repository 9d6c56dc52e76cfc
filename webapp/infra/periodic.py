"""Background work repeated on an interval, in a daemon thread (a greenlet under gevent)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis

log = logging.getLogger(__name__)
T = TypeVar("T")


def run_every(interval: float, work: Callable[[], object], name: str) -> threading.Event:
    """Calls ``work()`` every ``interval`` seconds until the returned event is set.
    A failing call is no reason to stop (Redis may blink): the next one runs as usual,
    and a run of failures is logged once when it starts and once when it ends."""
    stop = threading.Event()

    def loop() -> None:
        streak = Streak(name)
        while not stop.wait(interval):
            try:
                work()
            except Exception as error:
                streak.failed(error)
            else:
                streak.worked()

    threading.Thread(target=loop, name=name, daemon=True).start()
    return stop


class Streak:
    """Says a run of failures of one loop twice: when it starts and when it ends. An
    outage of Redis fails every call for as long as it lasts; one line each way tells the
    operator as much as one a call, and leaves the log readable (issue 35). Redis away is
    one line; anything else, a bug, keeps its traceback, once per kind of failure."""

    def __init__(self, name: str, logger: logging.Logger = log) -> None:
        self.name = name
        self.log = logger
        self.since = 0.0  # monotonic time of the streak's first failure; 0: none
        self.failing = ""  # what fails: the last failure said

    def failed(self, error: Exception) -> None:
        kind = type(error).__name__
        if not self.since:
            self.since = time.monotonic()
        elif kind == self.failing:
            return
        self.failing = kind
        if isinstance(error, redis.ConnectionError | redis.TimeoutError):
            self.log.warning(
                "%s cannot reach Redis (%s); trying again quietly until it works", self.name, error
            )
        else:
            self.log.exception("%s failed; trying again quietly until it works", self.name)

    def worked(self) -> None:
        if self.since:
            self.log.info("%s works again after %.0f s", self.name, time.monotonic() - self.since)
            self.since, self.failing = 0.0, ""


def off_the_loop(work: Callable[[], T]) -> T:
    """``work()``, run in a native thread when gevent has patched this process: a
    password hash (argon2 releases the GIL) then holds one thread, not every greenlet
    of the worker (about 145 ms per login otherwise). Elsewhere, a plain call."""
    monkey = sys.modules.get("gevent.monkey")  # gevent patches only once imported
    if monkey is None or not monkey.is_module_patched("threading"):
        return work()
    result: T = sys.modules["gevent"].get_hub().threadpool.apply(work)
    return result
