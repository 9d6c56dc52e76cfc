"""The admin login's limits (issue 25): wrong passwords per account and in total, beyond
them a 429 with ``Retry-After`` (``webapp.views.shared.errors``). Counted in Redis with
flask-limiter (moving windows; its keys under ``<prefix>:limits``), every worker and
host agreeing. (A join's limits are the admission's: ``webapp.domain.admission``.)

``WEBAPP_ADMIN_ACCOUNT_LIMIT`` (10 per 15 minutes) of wrong passwords per account name
and ``WEBAPP_ADMIN_TOTAL_LIMIT`` (100 per 15 minutes) in all, besides the per-address
``WEBAPP_ADMIN_FAILURE_LIMIT``: 200 guesses from 20 addresses are refused too. A browser
with a device cookie for the account (``webapp.web.admin_devices``) is outside those two
counts and has ``WEBAPP_ADMIN_ACCOUNT_LIMIT`` of its own instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Response, current_app, request

from webapp.web.admin_devices import device_of
from webapp.web.security import limiter


def _setting(name: str) -> Callable[[], str]:
    return lambda: str(current_app.config[name])


def _refused(response: Response) -> bool:
    return response.status_code == 401


def _account() -> str:
    return str(request.form.get("name", "")).strip()[:64].lower() or "-"


def _device() -> str | None:
    """The id of a valid device cookie for the account this login names, if it has one."""
    return device_of(str(request.form.get("name", "")).strip())


def _known_device() -> bool:
    return _device() is not None


# A browser with a device cookie for the account is outside the account's and the
# total's counts (strangers' wrong passwords never lock it out) and limited on its own
_per_account = limiter.shared_limit(
    _setting("ADMIN_ACCOUNT_LIMIT"), scope="admin-account", key_func=_account,
    deduct_when=_refused, exempt_when=_known_device,
)  # fmt: skip
_in_total = limiter.shared_limit(
    _setting("ADMIN_TOTAL_LIMIT"), scope="admin-total", key_func=lambda: "all",
    deduct_when=_refused, exempt_when=_known_device,
)  # fmt: skip
_per_device = limiter.shared_limit(
    _setting("ADMIN_ACCOUNT_LIMIT"), scope="admin-device", key_func=lambda: _device() or "-",
    deduct_when=_refused, exempt_when=lambda: not _known_device(),
)  # fmt: skip


def password_limited(view: Callable[..., Any]) -> Callable[..., Any]:
    """For the panel's login form: wrong passwords per account and in all, or, from a
    browser with a device cookie for the account (``webapp.web.admin_devices``), per device."""
    return _per_account(_in_total(_per_device(view)))
