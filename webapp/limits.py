"""Per-address limits (issue 25): joins and waitlist sign-ups per client address and per
network, and wrong admin passwords per account and in total. Counted in Redis with
flask-limiter (sliding-window counters, every worker and host agreeing; its keys under
``<prefix>:limits``), beyond them a 429 with ``Retry-After``: JSON for the API, the
friendly page in a browser (``webapp.views.errors``).

- ``WEBAPP_JOIN_LIMIT`` (20 per minute) per client address and
  ``WEBAPP_JOIN_NETWORK_LIMIT`` (200 per minute) per network (a /24 of IPv4, a /64 of
  IPv6), on every join: the room's button, the JSON API's join, a waitlist's sign-up. A
  re-join is not counted: a browser that holds a place in the room, an API join whose
  ``Idempotency-Key`` holds a live ticket there. Behind a proxy, set
  ``WEBAPP_PROXY_COUNT`` so that the client's address is the one counted.
- ``WEBAPP_SIGNUP_LIMIT`` (10 per hour) per address, on a waitlist's sign-ups.
- ``WEBAPP_ADMIN_ACCOUNT_LIMIT`` (10 per 15 minutes) of wrong passwords per account name
  and ``WEBAPP_ADMIN_TOTAL_LIMIT`` (100 per 15 minutes) in all, besides the per-address
  ``WEBAPP_ADMIN_FAILURE_LIMIT``: 200 guesses from 20 addresses are refused too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from flask import Response, current_app, request

from webapp.domain.refusals import RoomNotFound
from webapp.security import limiter
from webapp.views import lobby, reports, visitor

JOIN_SCOPES = ("join-address", "join-network", "signup-address")
ADMIN_SCOPES = ("admin-account", "admin-total")


def client_address() -> str:
    return request.remote_addr or "unknown"


def client_network() -> str:
    """The client's network: its /24 (IPv4) or /64 (IPv6); the address if unparsable."""
    address = client_address()
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    bits = 24 if ip.version == 4 else 64
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


def _setting(name: str) -> Callable[[], str]:
    return lambda: str(current_app.config[name])


def _rejoin() -> bool:
    """A join that takes no new place: it is not counted (decided before the view)."""
    room = (request.view_args or {}).get("room", "")
    if request.blueprint == "api":
        key = request.headers.get("Idempotency-Key", "")
        return bool(key) and len(key) <= 128 and reports().holds(room, f"api:{key}")
    return visitor.ticket(room) is not None


def _not_a_waitlist() -> bool:
    room = (request.view_args or {}).get("room", "")
    try:
        return lobby().settings(room).kind != "waitlist"
    except RoomNotFound:  # the view says so; nothing to count
        return True


_by_address = limiter.shared_limit(
    _setting("JOIN_LIMIT"), scope="join-address", key_func=client_address, exempt_when=_rejoin
)
_by_network = limiter.shared_limit(
    _setting("JOIN_NETWORK_LIMIT"), scope="join-network", key_func=client_network,
    exempt_when=_rejoin,
)  # fmt: skip
_signups = limiter.shared_limit(
    _setting("SIGNUP_LIMIT"), scope="signup-address", key_func=client_address,
    exempt_when=lambda: _not_a_waitlist() or _rejoin(),
)  # fmt: skip


def join_limited(view: Callable[..., Any]) -> Callable[..., Any]:
    """For every view that joins a room or signs up to a waitlist."""
    return _by_address(_by_network(_signups(view)))


def _refused(response: Response) -> bool:
    return response.status_code == 401


def _account() -> str:
    return str(request.form.get("name", "")).strip()[:64].lower() or "-"


_per_account = limiter.shared_limit(
    _setting("ADMIN_ACCOUNT_LIMIT"), scope="admin-account", key_func=_account,
    deduct_when=_refused,
)  # fmt: skip
_in_total = limiter.shared_limit(
    _setting("ADMIN_TOTAL_LIMIT"), scope="admin-total", key_func=lambda: "all",
    deduct_when=_refused,
)  # fmt: skip


def password_limited(view: Callable[..., Any]) -> Callable[..., Any]:
    """For the panel's login form: wrong passwords per account and in all."""
    return _per_account(_in_total(view))
