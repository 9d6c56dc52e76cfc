"""A room's own waiting page (issue 30): its page template rendered with the visitor's
live figures on the page and on every poll, the controls where it puts them, the
room's Content-Security-Policy, and the panel refusing a template that does not parse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# A template in Cloudflare Waiting Room's style: a whole document, its sections, its
# variables, a <noscript> wait and a script that must never run
CLOUDFLARE_STYLE = (Path(__file__).parents[1] / "pages" / "cloudflare_style.html").read_text()


def test_the_waiting_page_is_the_rooms_template(make_visitor: Any, make_room: Any) -> None:
    """The template renders with the visitor's figures, cleaned: no script, no handler;
    the controls sit where {{{controls}}} is, once, and our own card is gone."""
    make_room("hall", capacity=1, title="Acme <sale>", page_template=CLOUDFLARE_STYLE,
              page_asset_origins="https://cdn.acme.test")  # fmt: skip
    make_visitor("Ann").join("hall")
    page = make_visitor("Bob").join("hall")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "Acme &lt;sale&gt;: you are in line" in html
    assert '<strong id="acme-position">1</strong>, with 0 ahead of you and 1 waiting' in html
    assert "Your estimated wait time is about" in html
    own = html[html.index('<div class="own-page">') : html.index('id="page-controls"')]
    assert "pwned" not in html and "onerror" not in html and "<noscript" not in own
    assert html.count('id="page-controls"') == 1 and "Leave the line" in html
    assert html.count('id="while-waiting"') == 1
    assert 'class="card line"' not in html
    policy = page.headers["Content-Security-Policy"]
    assert "img-src 'self' data: https://cdn.acme.test" in policy
    assert "script-src 'self';" in policy


def test_the_poll_renders_the_template_again(make_visitor: Any, make_room: Any) -> None:
    """The htmx poll answers the template with the figures of now."""
    make_room("hall", capacity=1, page_template="<p>n={{position}} line={{lineLength}}</p>")
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    bob.join("hall")
    make_visitor("Cy").join("hall")
    partial = bob.get("/rooms/hall/line?seen=1", htmx=True).get_data(as_text=True)
    assert "<p>n=1 line=2</p>" in partial
    # without {{{controls}}} they stay beside the template, outside the polled part
    assert 'id="while-waiting"' not in partial and 'id="page-controls"' not in partial
    full = bob.get("/rooms/hall/line").get_data(as_text=True)
    assert full.count('id="while-waiting"') == 1


def test_a_room_without_a_template_keeps_the_usual_page(make_visitor: Any, make_room: Any) -> None:
    """No template: our card, and the usual policy (no inline styles)."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    page = make_visitor("Bob").join("hall")
    assert 'class="card line"' in page.get_data(as_text=True)
    assert "'unsafe-inline'" not in page.headers["Content-Security-Policy"]
