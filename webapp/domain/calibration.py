"""The estimate set by the room's own record. Pure functions: no Redis, no Flask.

The model (``webapp.domain.estimate``) says what its own statistics say; the room's
record says how right that has been. Every admission from the line is kept with the
model's figures at that ticket's join (its expected wait and standard deviation,
before any calibration) and the wait it had (``Reports.scored``). From the newest of
those (at least RECORD_MIN, within the last hour), the spread shown is scaled so that
the share of recent waits inside the model's mean +- scale x sd is INSIDE (a
split-conformal scale, kept within SCALE_BOUNDS): a model too sure of itself after a
change of pace shows a wider range, one that widened too much (a pace that moved and
settled) a narrower one. The scale is measured on the model's figures, not on the ones
shown, so it does not feed back on itself and every process works out the same one.
The model is in ``docs/estimates.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from webapp.domain.estimate import RECORD_MIN, Estimate

INSIDE = 0.7  # share of waits the range shown should hold
SCALE_BOUNDS = (0.5, 3.0)  # the model's spread is scaled at most this far either way
RECORD_COUNT = 2000  # newest scored admissions a calibration reads (within the hour)


class Scored(NamedTuple):
    """One admission from the line: the model's figures at its join, and its wait."""

    at: float  # admitted at
    wait: float  # the model's expected wait at the join
    spread: float  # ... and its standard deviation
    actual: float  # the wait it had


class Calibration(NamedTuple):
    """How the model's figures are shown: the spread times ``scale``."""

    scale: float = 1.0
    scored: int = 0  # admissions it was measured on (0: none, the model as it is)

    def apply(self, guess: Estimate) -> Estimate:
        return Estimate(guess.wait, guess.variance * self.scale * self.scale)


NONE = Calibration()


def quantile(values: Sequence[float], share: float) -> float:
    """The split-conformal quantile: the ceil((n + 1) * share)-th smallest of n values
    (the largest where that is past the end)."""
    ordered = sorted(values)
    k = math.ceil((len(ordered) + 1) * share) - 1
    return ordered[min(max(k, 0), len(ordered) - 1)]


def calibrate(record: Sequence[Scored]) -> Calibration:
    """The calibration from a room's record (newest admissions): the model as it is
    below RECORD_MIN of them with a spread; else the scale whose range would have held
    INSIDE of their waits, within SCALE_BOUNDS."""
    misses = [abs(s.actual - s.wait) / s.spread for s in record if s.spread > 0]
    if len(misses) < RECORD_MIN:
        return NONE
    low, high = SCALE_BOUNDS
    return Calibration(min(max(quantile(misses, INSIDE), low), high), len(misses))
