"""A visitor's signed cookie (webapp/web/admin_session.py): its signature is checked
once per process and its contents kept, so the waiting page's polls, which bring the
same cookie every few seconds, skip the check. What is kept never loosens the check: a
forged or altered cookie, or the same cookie past the session's lifetime, is a new
session as Flask's own would make it, and what a request changes is its own."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from flask import Flask


def cookie_of(visitor: Any) -> str:
    found = visitor.client.get_cookie("session")
    assert found is not None
    return str(found.value)


def name_on_join_card(app: Flask, cookie: str) -> bool:
    client = app.test_client()
    client.set_cookie("session", cookie)
    return 'value="Ann"' in client.get("/rooms/hall").get_data(as_text=True)


def test_a_kept_cookie_is_read_and_an_altered_one_is_not(
    app: Flask, make_visitor: Any, make_room: Any
) -> None:
    make_room("hall", capacity=1)
    cookie = cookie_of(make_visitor("Ann"))
    assert name_on_join_card(app, cookie)
    assert name_on_join_card(app, cookie)  # the kept contents: the same answer
    payload, stamp, signature = cookie.rsplit(".", 2)
    flipped = "A" if signature[0] != "A" else "B"
    for forged in (
        f"{payload}.{stamp}.{flipped}{signature[1:]}",  # another signature
        f"{payload[:-1]}{'A' if payload[-1] != 'A' else 'B'}.{stamp}.{signature}",  # altered
        f"{payload}.{stamp}",  # none
    ):
        assert not name_on_join_card(app, forged)


def test_a_kept_cookie_expires_with_the_session(
    app: Flask, make_visitor: Any, make_room: Any
) -> None:
    make_room("hall", capacity=1)
    app.permanent_session_lifetime = timedelta(seconds=1)
    cookie = cookie_of(make_visitor("Ann"))
    assert name_on_join_card(app, cookie)  # verified and kept
    time.sleep(2.1)  # whole seconds, as itsdangerous counts them
    assert not name_on_join_card(app, cookie)


def test_what_a_request_changes_is_its_own(app: Flask, make_visitor: Any, make_room: Any) -> None:
    """Two requests with one cookie: the first one's session is not the second's."""
    make_room("hall", capacity=1)
    cookie = cookie_of(make_visitor("Ann"))
    with app.test_request_context("/", headers={"Cookie": f"session={cookie}"}):
        from flask import request

        first = app.session_interface.open_session(app, request)
        assert first is not None and first["name"] == "Ann"
        first["name"] = "Mallory"  # changed in place, as a view may do before saving
        second = app.session_interface.open_session(app, request)
        assert second is not None and second["name"] == "Ann"
