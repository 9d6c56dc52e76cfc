"""The organisers' notice and the visitor's support code on the visitor's pages."""

from __future__ import annotations

from typing import Any


def test_waiting_page_shows_the_support_code_and_the_notice(
    make_visitor: Any, make_room: Any, app: Any
) -> None:
    """The code names the ticket; a notice set later shows at the next poll."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    page = bob.join("hall").get_data(as_text=True)
    code = app.extensions["services"].reports.search("hall", "Bob")[0].code
    assert f'<strong class="code">{code}</strong>' in page
    assert page.count('id="notice"') == 1
    assert 'id="notice" class="card notice" role="status" aria-live="polite"' in page
    app.extensions["services"].visits.notice("hall", "Doors <b>close</b> at ten", who="t")
    poll = bob.get("/rooms/hall/line", htmx=True).get_data(as_text=True)
    assert "Doors &lt;b&gt;close&lt;/b&gt; at ten" in poll  # escaped, never markup
    assert poll.count('id="notice"') == 1  # replaces the page's own, out of band
    assert 'hx-swap-oob="true">' in poll.split('id="notice"')[1].split("\n")[0]


def test_room_page_shows_the_notice_and_the_support_code(
    make_visitor: Any, make_room: Any, app: Any
) -> None:
    """Someone seated sees the current notice on load, and their own code."""
    make_room("hall", capacity=1)
    app.extensions["services"].visits.notice("hall", "Welcome!", who="t")
    page = make_visitor("Ann").join("hall").get_data(as_text=True)
    assert '<p id="notice-text" dir="auto">Welcome!</p>' in page  # its own direction
    code = app.extensions["services"].reports.seated("hall")[0].code
    assert f'<strong class="code">{code}</strong>' in page
