"""Template filters every page may use, registered on the app by the factory (not as a
side effect of a blueprint): times in UTC, short spans of time, shares, and the panel's
words for a wait and an audit entry."""

from __future__ import annotations

import time
from collections.abc import Callable

from flask import Flask

from webapp.domain.estimate import Estimate
from webapp.views.admin_words import audit_detail
from webapp.views.words import wait_words


def duration(seconds: float) -> str:
    """3 s, 4 min 05 s, 2 h 07 min, 3 d 4 h: a span of time, short."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def utc(at: float, seconds: bool = True) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%H:%M", time.gmtime(at))


def wait_at_back(guess: Estimate | None) -> str:
    return "not measured yet" if guess is None else wait_words(guess, "open")


def percent(share: float | None) -> str:
    return "no data" if share is None else f"{share * 100:.0f} %"


FILTERS: dict[str, Callable[..., str]] = {"duration": duration, "utc": utc,
    "wait_at_back": wait_at_back, "percent": percent, "audit_detail": audit_detail}  # fmt: skip


def init_app(app: Flask) -> None:
    for name, function in FILTERS.items():
        app.add_template_filter(function, name)
