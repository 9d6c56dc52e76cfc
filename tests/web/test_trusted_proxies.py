"""Forwarded headers from trusted proxies alone (issue 29): WEBAPP_TRUSTED_PROXIES, and
X-Forwarded-Prefix taken only as a plain path."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from tests.web.conftest import running_app
from webapp import create_app
from webapp.config import ConfigError
from webapp.web.trusted_proxies import plain_prefix, trusted_networks

STRANGER = "198.51.100.9"  # reaches the app's port directly
PROXY = "10.0.0.5"


@pytest.fixture
def app(redis_url: str, r: Any, tmp_path: Any) -> Iterator[Flask]:
    """One proxy in front (PROXY_COUNT=1) at 10.0.0.5; 3 joins a minute per address."""
    with running_app(
        redis_url, DATA_DIR=str(tmp_path), PROXY_COUNT=1, TRUSTED_PROXIES=f"{PROXY}, 10.9.0.0/16",
        JOIN_LIMIT="3 per minute",
    ) as app:  # fmt: skip
        app.extensions["services"].rooms.configure("hall", {"capacity": 1})
        yield app


def api_join(app: Flask, peer: str, forwarded_for: str) -> int:
    reply = app.test_client().post(
        "/api/rooms/hall/join", json={}, headers={"X-Forwarded-For": forwarded_for},
        environ_base={"REMOTE_ADDR": peer},
    )  # fmt: skip
    return int(reply.status_code)


def test_a_forged_forwarded_for_does_not_lift_the_join_limit(app: Flask) -> None:
    """A stranger who reaches the port directly, a new X-Forwarded-For on every join:
    still one address, 3 joins then 429."""
    codes = [api_join(app, STRANGER, f"203.0.113.{i}") for i in range(1, 6)]
    assert codes == [200] * 3 + [429] * 2


def test_a_trusted_proxys_forwarded_for_is_honoured(app: Flask) -> None:
    """From the proxy (an address, or within a network listed), each X-Forwarded-For is
    its own client: 3 joins each, the fourth refused to that client alone."""
    assert [api_join(app, PROXY, "203.0.113.1") for _ in range(4)] == [200] * 3 + [429]
    assert api_join(app, PROXY, "203.0.113.2") == 200
    assert api_join(app, "10.9.4.4", "192.0.2.77") == 200  # within 10.9.0.0/16


def test_untrusted_peers_headers_are_ignored(app: Flask) -> None:
    """From a stranger, X-Forwarded-Proto, -Host and -Prefix change no URL; from the
    proxy they do."""
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example",
               "X-Forwarded-Prefix": "/queue"}  # fmt: skip
    stranger = app.test_client().get("/", headers=headers, environ_base={"REMOTE_ADDR": STRANGER})
    page = stranger.get_data(as_text=True)
    assert 'src="/static/' in page and "evil.example" not in page and "/queue" not in page
    proxied = app.test_client().get("/", headers=headers, environ_base={"REMOTE_ADDR": PROXY})
    assert 'src="/queue/static/' in proxied.get_data(as_text=True)


def test_loopback_is_trusted_by_default(redis_url: str, r: Any, tmp_path: Any) -> None:
    """PROXY_COUNT alone: 127.0.0.1 and ::1 are trusted, any other peer is not."""
    headers = {"X-Forwarded-Prefix": "/queue"}
    with running_app(redis_url, DATA_DIR=str(tmp_path), PROXY_COUNT=1) as app:
        for peer, expected in [("127.0.0.1", True), ("::1", True), ("127.3.4.5", True),
                               ("::ffff:127.0.0.1", True), ("192.0.2.1", False),
                               ("::2", False)]:  # fmt: skip
            reply = app.test_client().get("/", headers=headers, environ_base={"REMOTE_ADDR": peer})
            assert ('src="/queue/static/' in reply.get_data(as_text=True)) is expected, peer


SCRIPTS = re.compile(r'<script[^>]* src="([^"]+)"')


@pytest.mark.parametrize(
    "prefix", ["//evil.example", "/\\evil.example", "https://evil.example", "/a//b", "/..",
               "/q ueue", "/queue?x", "/\u00e9"],
)  # fmt: skip
def test_a_prefix_that_is_not_a_plain_path_is_ignored(redis_url, r, tmp_path, prefix) -> None:
    """From a trusted proxy, an X-Forwarded-Prefix that is not a plain path is never
    written into the page: its scripts stay at the app's own root."""
    with running_app(redis_url, DATA_DIR=str(tmp_path), PROXY_COUNT=1) as app:
        reply = app.test_client().get("/", headers={"X-Forwarded-Prefix": prefix})
    page = reply.get_data(as_text=True)
    assert reply.status_code == 200 and "evil.example" not in page
    scripts = SCRIPTS.findall(page)
    assert scripts and all(src.startswith("/static/") for src in scripts)


@pytest.mark.parametrize("prefix", ["/", "/shop", "/a/b", "/queue/", "/x-1.2_~y"])
def test_plain_paths_are_prefixes(prefix: str) -> None:
    """/ and segments of letters, digits and ._~- are plain paths."""
    assert plain_prefix(prefix)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [(None, ["127.0.0.0/8", "::1/128"]), ("10.0.0.5", ["10.0.0.5/32"]),
     ("10.0.0.5,10.1.0.0/16 2001:db8::/32", ["10.0.0.5/32", "10.1.0.0/16", "2001:db8::/32"]),
     (["192.0.2.1", "192.0.2.0/24"], ["192.0.2.1/32", "192.0.2.0/24"])],
)  # fmt: skip
def test_trusted_proxies_are_read(setting: Any, expected: list[str]) -> None:
    """Addresses and networks, separated by commas or spaces, or a JSON list."""
    assert [str(network) for network in trusted_networks(setting)] == expected


@pytest.mark.parametrize("value", ["10.0.0.300", "proxy.example", "10.0.0.0/40", ",", "5"])
def test_bad_trusted_proxies_refuse_to_start(monkeypatch, redis_url, tmp_path, value) -> None:
    """A value that is not addresses stops the app with a message naming the setting."""
    monkeypatch.setenv("WEBAPP_TRUSTED_PROXIES", value)
    with pytest.raises(ConfigError, match="WEBAPP_TRUSTED_PROXIES is "):
        create_app({"TESTING": True, "REDIS_URL": redis_url, "DATA_DIR": str(tmp_path),
                    "PROXY_COUNT": 1})  # fmt: skip
