"""The room websocket's handshake: refused before it starts, unless it may go ahead."""

from __future__ import annotations

from typing import Any

from webapp.web.security import same_origin

UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}


def test_foreign_origin_is_refused(make_visitor: Any, make_room: Any) -> None:
    """A page of another site may not open the visitor's room socket."""
    make_room("hall")
    ann = make_visitor("Ann")
    ann.join("hall")
    reply = ann.client.get("/rooms/hall/ws", headers={**UPGRADE, "Origin": "https://evil.example"})
    assert reply.status_code == 403
    assert "Sec-WebSocket-Accept" not in reply.headers


def test_socket_needs_a_ticket_in_that_room(make_visitor: Any, make_room: Any) -> None:
    """A visitor who never joined the room gets no socket there."""
    make_room("hall")
    reply = make_visitor("Ann").client.get(
        "/rooms/hall/ws", headers={**UPGRADE, "Origin": "http://localhost"}
    )
    assert reply.status_code == 403


def test_same_origin_rules() -> None:
    """Only the page's own scheme, host and port, or an allowed origin, passes."""
    assert same_origin("http://example.org", "http", "example.org")
    assert same_origin("http://example.org", "http", "example.org:80")
    assert same_origin("https://Example.org:8443", "https", "example.org:8443")
    assert same_origin("https://example.org", "https", "example.org:443")
    assert same_origin(None, "http", "example.org")
    assert not same_origin("https://example.org.evil.net", "https", "example.org")
    assert not same_origin("null", "http", "example.org")
    assert not same_origin("file://example.org", "http", "example.org")
    assert not same_origin("http://example.org", "https", "example.org")  # scheme differs
    assert not same_origin("https://example.org", "http", "example.org")
    assert not same_origin("https://example.org:8443", "https", "example.org")  # port
    assert not same_origin("https://example.org:99999", "https", "example.org")
    assert not same_origin("http://example.org", "http", "")
    allowed = ("https://app.example",)
    assert same_origin("https://app.example", "http", "example.org", allowed=allowed)
