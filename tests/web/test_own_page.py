"""A room's own waiting page (issue 30): its page template rendered with the visitor's
live figures on the page and on every poll, the controls where it puts them, the
room's Content-Security-Policy, and the panel refusing a template that does not parse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.web.test_admin_panel import newest

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
    full = bob.get("/rooms/hall/line")  # the reload of a page without JavaScript
    assert full.get_data(as_text=True).count('id="while-waiting"') == 1
    assert "'unsafe-inline'" in full.headers["Content-Security-Policy"]


def test_a_room_without_a_template_keeps_the_usual_page(make_visitor: Any, make_room: Any) -> None:
    """No template: our card, and the usual policy (no inline styles)."""
    make_room("hall", capacity=1)
    make_visitor("Ann").join("hall")
    page = make_visitor("Bob").join("hall")
    assert 'class="card line"' in page.get_data(as_text=True)
    assert "'unsafe-inline'" not in page.headers["Content-Security-Policy"]


@pytest.fixture
def app(panel_app: Flask) -> Flask:
    return panel_app


def test_the_panel_refuses_a_template_that_does_not_parse(panel: Any, make_room: Any) -> None:
    """A 400 page saying what and where; nothing saved, what was typed kept."""
    make_room("hall")
    typed = "<h1>{{roomTitle}}</h1>\n<p>{{#waitTimeKnown}}soon</p>"
    refused = panel.post("/admin/rooms/hall/page", page_template=typed, page_asset_origins="")
    html = refused.get_data(as_text=True)
    assert refused.status_code == 400
    assert "Nothing was changed." in html
    assert "opens the section waitTimeKnown at line 2, column 4 and never closes it" in html
    assert "&lt;h1&gt;{{roomTitle}}&lt;/h1&gt;" in html  # as typed, in the textarea
    assert 'aria-invalid="true"' in html
    assert "line 2" not in panel.page("/admin/rooms/hall/page")  # nothing saved


@pytest.mark.parametrize(
    ("template", "origins", "says"),
    [
        ("{{waitTim}}", "", "uses {{waitTim}} at line 1, column 1, which is not a variable"),
        ("{{> header}}", "", "partials are not supported"),
        ("x" * 70_000, "", "at most"),
        ("", "https://cdn.example.com/logo.png", "not &#39;https://cdn.example.com/logo.png&#39;"),
        ("", "cdn.example.com", "a scheme and a host"),
    ],
)
def test_the_panel_says_what_is_wrong(
    panel: Any, make_room: Any, template: str, origins: str, says: str
) -> None:
    make_room("hall")
    refused = panel.post(
        "/admin/rooms/hall/page", page_template=template, page_asset_origins=origins
    )
    assert refused.status_code == 400
    assert says in refused.get_data(as_text=True)


def test_the_panel_saves_and_previews_the_page(
    panel: Any, make_room: Any, engine: Any, reports: Any
) -> None:
    """Saved (audited as settings), listed with every variable, previewed with sample
    figures in a frame only the panel may hold."""
    make_room("hall", title="Acme")
    saved = panel.post(
        "/admin/rooms/hall/page",
        page_template=CLOUDFLARE_STYLE,
        page_asset_origins="https://cdn.acme.test\nhttps://*.images.acme.test",
    )
    size = len(CLOUDFLARE_STYLE.strip().encode())
    assert f"Saved: Page template empty → a template of {size:,} bytes" in panel.flashed(saved)
    settings = engine.find_settings("hall")
    assert settings.page_template == CLOUDFLARE_STYLE.strip()
    audited = newest(reports, "settings")  # a long value is audited as its size and digest
    assert len(audited.detail) < 400 and f'"#{size}:' in audited.detail
    assert f"a template of {size:,} bytes" in panel.page("/admin/rooms/hall/audit")
    editor = panel.page("/admin/rooms/hall/page")
    for name in ("waitTimeKnown", "waitTime25Percentile", "isEventPrequeueing", "nextUrl"):
        assert f"<code>{name}</code>" in editor
    assert 'src="/admin/rooms/hall/page/preview"' in editor and 'width="390"' in editor
    shown = panel.client.get("/admin/rooms/hall/page/preview")
    html = shown.get_data(as_text=True)
    assert '<strong id="acme-position">42</strong>, with 41 ahead of you and 180 waiting' in html
    assert "frame-ancestors 'self'" in shown.headers["Content-Security-Policy"]
    assert "https://*.images.acme.test" in shown.headers["Content-Security-Policy"]
    assert shown.headers["X-Frame-Options"] == "SAMEORIGIN"
    typed = panel.post("/admin/rooms/hall/page/preview", page_template="<p>{{waitTime}} min</p>")
    assert "<p>12 min</p>" in typed.get_data(as_text=True)
    broken = panel.post("/admin/rooms/hall/page/preview", page_template="{{#queueAll}}")
    assert "never closes it" in broken.get_data(as_text=True)
    assert "frame-ancestors 'self'" in broken.headers["Content-Security-Policy"]
    assert panel.client.get("/admin/rooms/hall/page").status_code == 200


def test_the_editor_is_behind_the_login(app: Flask, make_room: Any) -> None:
    """No admin, no editor and no preview."""
    make_room("hall")
    client = app.test_client()
    for path in ("/admin/rooms/hall/page", "/admin/rooms/hall/page/preview"):
        assert client.get(path).status_code in (302, 303, 401)


def test_a_preview_leaves_the_editors_message_alone(panel: Any, make_room: Any) -> None:
    """The frames post the template as it is typed, and one may arrive between "Save"
    and the page it leads to: the "Saved" message is still there (a preview that took
    it left the editor saying nothing, as a loaded browser test once saw)."""
    make_room("hall", title="Acme")
    token = panel.csrf("/admin/")  # the editor's page had it: no page is asked for between
    form = {"page_template": "<p>{{position}}</p>", "csrf_token": token}
    saved = panel.client.post("/admin/rooms/hall/page", data=form)
    assert saved.status_code == 303
    typed = panel.client.post("/admin/rooms/hall/page/preview", data=form)
    assert typed.status_code == 200 and "Saved" not in typed.get_data(as_text=True)
    assert "Saved: Page template" in panel.page(saved.location)
