"""The one clock of a process: every service that needs the time reads this one.

A test passes its own callable (``WEBAPP_CLOCK`` in the settings, ``CLOCK`` to
``create_app``); without one, Python reads this host's time and the Lua scripts read
Redis ``TIME``, so app hosts with skewed clocks still agree on every deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    def __init__(self, given: Callable[[], float] | None = None) -> None:
        self.given = given

    def __call__(self) -> float:
        """Seconds since the epoch."""
        return self.given() if self.given is not None else time.time()

    def for_scripts(self) -> str:
        """The ``now`` argument of a room script: empty means Redis ``TIME``."""
        return "" if self.given is None else repr(self.given())


def clock_of(given: Clock | Callable[[], float] | None) -> Clock:
    """A Clock, from a Clock or a test's callable (None: the host's and Redis's)."""
    return given if isinstance(given, Clock) else Clock(given)
