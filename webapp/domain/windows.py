"""Check-in windows by distance from the head of the line (issue 26). Pure functions:
no Redis, no Flask.

Near the head a waiting visitor must check in within ``dropout_seconds``; further back
within a share (``WINDOW_SHARE``) of the likely-earliest admission time, the estimate
less its spread, at most ``max_checkin_seconds``. ``room_windows.lua`` grants the
windows and keeps them as each ticket's deadline; it knows the room's pace through a
*hint*, three numbers the sweep works out here from the measured pace and keeps in the
room's clock hash (``Visits.sweep``):

    low(ahead) = a * ahead - b * sqrt(ahead) + c

a lower bound of ``estimate.wait_for(rates, ahead).range[0]`` for every ``ahead``
(derived in ``hint``; ``tests/unit/test_windows.py`` checks it). ``window`` is the
script's rule in Python, for the model test and the simulations of ``bench/``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from webapp.domain.pace import Rates, long_run_c2

WINDOW_SHARE = 0.5  # of the likely-earliest admission time (room_windows.lua)
PASS_MAX = 20  # tickets on a long window an offer looks past, at most (room_windows.lua)
HINT_EVERY = 5.0  # seconds: how often the sweep works the hint out again, per room
HINT_VALID = 60.0  # seconds a hint holds: with none, every window is dropout_seconds


class Hint(NamedTuple):
    """low(ahead) = a * ahead - b * sqrt(ahead) + c: seconds, a lower bound of the
    likely-earliest admission time of a visitor with ``ahead`` people in front."""

    a: float
    b: float
    c: float

    def low(self, ahead: int) -> float:
        return self.a * ahead - self.b * math.sqrt(ahead) + self.c

    def text(self, until: float) -> str:
        """The clock hash's "pace" field: "a b c until"."""
        return f"{self.a:.17g} {self.b:.17g} {self.c:.17g} {until:.17g}"


def hint(rates: Rates | None) -> Hint | None:
    """The hint for a room's measured pace; None when unknown or too uncertain.

    With J = 1 + k * stay releases to wait for (k ahead), mu the release rate, r^2 the
    relative variance of the rate (its error and the most a drift adds) and cmax the
    largest squared variation of the releases (``estimate.departure_c2`` lies between
    the gaps' and the long run's), ``estimate.wait_for`` gives
        wait = J / mu,  spread <= sqrt(J * cmax + k * stay * (1 - stay)) / mu + wait * r
    and sqrt(x + y) <= sqrt(x) + sqrt(y), so
        wait - spread >= a * k - b * sqrt(k) + c  with
        a = stay * (1 - r) / mu,  b = sqrt(stay * (cmax + 1 - stay)) / mu,
        c = (1 - r - sqrt(cmax)) / mu.
    (Seats held over the capacity only add to the wait.)
    """
    if rates is None or rates.service <= 0:
        return None
    r = math.sqrt(max(rates.rate_error + rates.moved, 0.0))
    if not r < 1.0:
        return None
    mu, stay = rates.service, min(max(rates.stay, 0.0), 1.0)
    cmax = max(rates.c2, long_run_c2(rates.cs2, rates.capacity), 0.0)
    figures = (
        stay * (1.0 - r) / mu,
        math.sqrt(stay * (cmax + 1.0 - stay)) / mu,
        (1.0 - r - math.sqrt(cmax)) / mu,
    )
    if not all(math.isfinite(x) for x in figures):
        return None
    return Hint(*figures)


def window(hint: Hint | None, ahead: int, dropout: int, max_checkin: int) -> int:
    """Seconds a waiting visitor with ``ahead`` people in front may go without checking
    in (``room_windows.lua`` window_at, the same arithmetic)."""
    if hint is None or ahead <= 0:
        return dropout
    w = math.floor(WINDOW_SHARE * hint.low(ahead))
    return max(dropout, min(max_checkin, w))
