"""Per-address limits (issue 25): joins and waitlist sign-ups per client address and per
network, and wrong admin passwords per account and in total; beyond them a 429 with
``Retry-After``: JSON for the API, the friendly page in a browser
(``webapp.views.errors``). Counted in Redis, every worker and host agreeing.

- ``WEBAPP_JOIN_LIMIT`` (20 per minute) per client address and
  ``WEBAPP_JOIN_NETWORK_LIMIT`` (200 per minute) per network (a /24 of IPv4, a /64 of
  IPv6), on every join: the room's button, the JSON API's join, a waitlist's sign-up;
  ``WEBAPP_SIGNUP_LIMIT`` (10 per hour) per address, on a waitlist's sign-ups. All of a
  join's limits are checked and counted by one script (``webapp.domain.join_limits``:
  never more than the limit in any span of its window). A
  re-join is not counted: a browser that holds a place in the room, an API join whose
  ``Idempotency-Key`` holds a live ticket there. Behind a proxy, set
  ``WEBAPP_PROXY_COUNT`` so that the client's address is the one counted (believed
  from ``WEBAPP_TRUSTED_PROXIES`` alone: ``webapp.trusted_proxies``).
- ``WEBAPP_ADMIN_ACCOUNT_LIMIT`` (10 per 15 minutes) of wrong passwords per account name
  and ``WEBAPP_ADMIN_TOTAL_LIMIT`` (100 per 15 minutes) in all, besides the per-address
  ``WEBAPP_ADMIN_FAILURE_LIMIT``: 200 guesses from 20 addresses are refused too. A
  browser with a device cookie for the account (``webapp.admin_devices``) is outside
  those two counts and has ``WEBAPP_ADMIN_ACCOUNT_LIMIT`` of its own instead. These
  count with flask-limiter (moving windows; its keys under ``<prefix>:limits``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any

from flask import Response, current_app, request
from limits import parse

from webapp.admin_devices import device_of
from webapp.domain.join_limits import Limit, network_of
from webapp.domain.refusals import RoomNotFound
from webapp.security import limiter
from webapp.views import challenge_gate, lobby, services, visitor


def client_address() -> str:
    return request.remote_addr or "unknown"


@lru_cache(maxsize=16)
def amount_and_window(notation: str) -> tuple[int, int]:
    """ "20 per minute" (flask-limiter's notation): (20, 60)."""
    item = parse(notation)
    return item.amount, item.get_expiry()


def _setting(name: str) -> Callable[[], str]:
    return lambda: str(current_app.config[name])


def _rejoin(room: str) -> bool:
    """A join that takes no new place: it is not counted (decided before the view)."""
    if request.blueprint == "api":
        key = request.headers.get("Idempotency-Key", "")
        # longer than api.MAX_IDEMPOTENCY_KEY: the view refuses it, no Redis call here
        return len(key) <= 128 and challenge_gate.api_holds_place(room, key)
    return visitor.ticket(room) is not None


def _waitlist(room: str) -> bool:
    try:
        return lobby().settings(room).kind == "waitlist"
    except RoomNotFound:  # the view says so; nothing to count
        return False


def join_limits(room: str, address: str, network: str) -> list[Limit]:
    """The limits this request's join (from ``address``, in ``network``) is under, in the
    order they are reported."""
    if _rejoin(room):
        return []
    config = current_app.config
    found = [
        Limit("join-address", address, *amount_and_window(config["JOIN_LIMIT"])),
        Limit("join-network", network, *amount_and_window(config["JOIN_NETWORK_LIMIT"])),
    ]
    if _waitlist(room):
        found.append(Limit("signup-address", address, *amount_and_window(config["SIGNUP_LIMIT"])))
    return found


def join_limited(view: Callable[..., Any]) -> Callable[..., Any]:
    """For every view that joins a room or signs up to a waitlist: Throttled (a 429)
    beyond a limit, else the join is counted and the view runs."""

    @wraps(view)
    def limited(*args: Any, **kwargs: Any) -> Any:
        built = services()
        room = str(kwargs.get("room", ""))
        address = client_address()
        network = network_of(address)
        built.join_limits.hit(join_limits(room, address, network), network, built.clock())
        return view(*args, **kwargs)

    return limited


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
    browser with a device cookie for the account (``webapp.admin_devices``), per device."""
    return _per_account(_in_total(_per_device(view)))
