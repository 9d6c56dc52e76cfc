"""Which peers' forwarded headers are believed (issue 29).

Behind a reverse proxy (``WEBAPP_PROXY_COUNT``) the client's address, scheme, host,
port and mount path come in ``X-Forwarded-*`` headers, which anyone who reaches the
app's port directly can write too: a forged ``X-Forwarded-For`` would lift every
per-address limit. So werkzeug's ``ProxyFix`` applies only to a request whose peer
(``REMOTE_ADDR``) is in ``WEBAPP_TRUSTED_PROXIES`` (addresses and networks; by default
loopback); from any other peer the headers are ignored. A Unix socket's peer (an empty
``REMOTE_ADDR``) is a local process, trusted as gunicorn trusts it.

``X-Forwarded-Prefix`` becomes every URL the app builds (scripts, links, forms), so it
is taken only as a plain path (``/queue``, ``/a/b``): anything else (``//evil.example``,
a scheme, a backslash) is ignored.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from werkzeug.middleware.proxy_fix import ProxyFix

from webapp.domain.join_limits import ip_of

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = "127.0.0.0/8, ::1"  # WEBAPP_TRUSTED_PROXIES unset: a proxy on the same host
PLAIN_PATH = re.compile(r"(/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*/?")  # no '.' or '..' segment


def trusted_networks(setting: Any) -> tuple[Network, ...]:
    """``WEBAPP_TRUSTED_PROXIES`` read: addresses and CIDR networks, separated by commas
    or spaces (or a JSON list of them); None means loopback. ValueError names what is
    not an address."""
    raw = LOOPBACK if setting is None else setting
    words: Iterable[Any] = raw.replace(",", " ").split() if isinstance(raw, str) else raw
    if not isinstance(words, list | tuple):
        raise ValueError(f"{raw!r} is not a list of addresses")
    found = []
    for word in words:
        try:
            found.append(ipaddress.ip_network(str(word).strip(), strict=False))
        except ValueError:
            raise ValueError(f"{word!r} is not an address or a network") from None
    if not found:
        raise ValueError("it names no address")
    return tuple(found)


def plain_prefix(value: str) -> bool:
    """Whether an ``X-Forwarded-Prefix`` is a plain path: ``/`` and segments of
    letters, digits, ``._~-`` (no empty, ``.`` or ``..`` segment)."""
    return PLAIN_PATH.fullmatch(value) is not None


class TrustedProxyFix:
    """WSGI middleware: ``ProxyFix`` with ``hops`` for a request from a trusted peer;
    any other request goes on as it came, its forwarded headers unread."""

    def __init__(self, app: WSGIApplication, hops: int, trusted: tuple[Network, ...]) -> None:
        self.app = app
        self.hops = hops
        self.trusted = trusted
        self.fixed = ProxyFix(
            app, x_for=hops, x_proto=hops, x_host=hops, x_port=hops, x_prefix=hops
        )

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Any:
        if not self.from_trusted(environ.get("REMOTE_ADDR", "")):
            return self.app(environ, start_response)
        prefix = environ.get("HTTP_X_FORWARDED_PREFIX")
        if prefix is not None and not plain_prefix(self.chosen(prefix)):
            del environ["HTTP_X_FORWARDED_PREFIX"]  # the app stays at its own root
        return self.fixed(environ, start_response)

    def from_trusted(self, peer: str) -> bool:
        if not peer:
            return True  # a Unix socket: only local processes can connect
        address = ip_of(peer)
        return address is not None and any(address in network for network in self.trusted)

    def chosen(self, header: str) -> str:
        """The value ``ProxyFix`` takes from a header: the ``hops``-th from the right."""
        values = [part.strip() for part in header.split(",")]
        return values[-self.hops] if len(values) >= self.hops else ""
