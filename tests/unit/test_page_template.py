"""A room's page template (webapp/domain/page_template.py): Cloudflare's variables and
sections render, every figure is escaped, nothing that runs survives, the 64 KB limit,
and problems said with where they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.domain import page_template
from webapp.domain.settings import BY_NAME, InvalidSetting

CLOUDFLARE_STYLE = (Path(__file__).parents[1] / "pages" / "cloudflare_style.html").read_text()
CONTROLS = '<div id="page-controls"><a href="/rooms/hall/leave">Leave</a></div>'


def figures(**changed: page_template.Value) -> dict[str, page_template.Value]:
    base: dict[str, page_template.Value] = {
        "waitTimeKnown": True, "waitTime": 12, "waitTimeFormatted": "about 10 to 14 minutes",
        "queueIsFull": False, "queueAll": False, "position": 42, "ahead": 41,
        "lineLength": 180, "roomTitle": "Acme", "supportCode": "K7Q2XM",
        "lastUpdated": "2026-11-28T19:00:00.000Z", "refreshIntervalSeconds": 10,
        "locale": "en", "isEventPrequeueing": False,
    }  # fmt: skip
    return base | changed


def test_a_cloudflare_template_renders_with_its_sections() -> None:
    """Their sections pick the words; the <noscript> wait shows (no script runs here)."""
    known = page_template.render(CLOUDFLARE_STYLE, figures(), CONTROLS).html
    assert "Your estimated wait time is about 10 to 14 minutes..." in known
    assert "unavailable" not in known
    assert '<strong id="acme-position">42</strong>, with 41 ahead of you and 180 waiting' in known
    assert '<span style="width: 12%"></span>' in known
    unknown = page_template.render(CLOUDFLARE_STYLE, figures(waitTimeKnown=False), "").html
    assert "Your estimated wait time is unavailable." in unknown
    assert 'style="width:' not in unknown
    full = page_template.render(
        CLOUDFLARE_STYLE, figures(waitTimeKnown=False, queueIsFull=True), ""
    ).html
    assert "The line is full" in full and "unavailable" not in full
    paused = page_template.render(CLOUDFLARE_STYLE, figures(queueAll=True), "").html
    assert "Nobody is let in right now" in paused


def test_nothing_that_runs_survives() -> None:
    """No script (with its text), no handler, no javascript: link, no htmx or data
    attribute, no form, no frame; styles and images stay; the markup is balanced."""
    template = (
        '<div class="x" style="color:red" onclick="go()" hx-get="/x" data-dialog="d">'
        "<script>alert(1)</script><style>.x{color:blue}</style>"
        '<img src="https://cdn.example.com/a.png" onerror="alert(2)" alt="A">'
        '<a href="javascript:alert(3)">j</a><a href="https://example.com/">ok</a>'
        '<iframe src="/"></iframe><form action="/leave"><button>go</button></form>'
        "<svg onload=alert(4)></svg></div></div></main>"
    )
    html = page_template.render(template, figures(), "").html
    for bad in ("script", "alert", "onclick", "hx-get", "data-dialog", "javascript:",
                "<iframe", "<form", "<svg", "</main>"):  # fmt: skip
        assert bad not in html, bad
    assert "<style>.x{color:blue}</style>" in html and 'style="color:red"' in html
    assert '<img src="https://cdn.example.com/a.png" alt="A">' in html
    assert html.count("<div") == html.count("</div>") == 1


def test_every_figure_is_escaped() -> None:
    """{{x}} and {{{x}}} alike: a figure is text, whatever it holds; only the controls
    are HTML."""
    hostile = "\"><script>alert(1)</script><img src=x onerror=alert(2)>'"
    for tag in ("{{roomTitle}}", "{{{roomTitle}}}", "{{&roomTitle}}"):
        html = page_template.render(f'<p title="{tag}">{tag}</p>', figures(roomTitle=hostile), "")
        assert "<script" not in html.html and "onerror=" not in html.html.replace(
            "onerror=alert", ""
        )
        assert "&lt;script&gt;" in html.html


def test_the_controls_go_where_the_template_says_once() -> None:
    at = page_template.render("<h1>A</h1>{{{controls}}}<p>B</p>{{{controls}}}", figures(), CONTROLS)
    assert at.placed and at.html == f"<h1>A</h1>{CONTROLS}<p>B</p>"
    hidden = page_template.render(
        "<h1>A</h1>{{#queueAll}}{{{controls}}}{{/queueAll}}", figures(), CONTROLS
    )
    assert hidden.placed and hidden.html == f"<h1>A</h1>{CONTROLS}"  # never lost
    none = page_template.render("<h1>A</h1>", figures(), CONTROLS)
    assert not none.placed and none.html == "<h1>A</h1>"
    escaped = page_template.render("<p>{{controls}}</p>", figures(), CONTROLS)
    assert "<span" not in escaped.html and CONTROLS not in escaped.html


PROBLEMS = [
    ("<p>{{#waitTimeKnown}}soon</p>",
     "opens the section waitTimeKnown at line 1, column 4 and never closes it"),
    ("<p>\n  {{/queueAll}}",
     "closes the section queueAll at line 2, column 3, which was not opened"),
    ("{{#queueAll}}{{#queueIsFull}}\n{{/queueAll}}{{/queueIsFull}}",
     "closes the section queueAll at line 2, column 1, but the section open there is "
     "queueIsFull (opened at line 1, column 14)"),
    ("<p>a</p>\n<p>{{waitTime</p>", "has a {{ that is not closed, at line 2, column 4"),
    ("\n\n   {{waitTim}}",
     "uses {{waitTim}} at line 3, column 4, which is not a variable here"),
    ("{{> header}}",
     "uses a partial ({{> header}}) at line 1, column 1: partials are not supported"),
    ("{{roomTitle.__class__}}", "uses {{roomTitle.__class__}} at line 1, column 1"),
    ("{{#roomTitle}}{{upper}}{{/roomTitle}}", "uses {{upper}} at line 1, column 15"),
    ("{{=<% %>=}}<%#queueAll%>", "does not parse"),
]  # fmt: skip


@pytest.mark.parametrize(("template", "says"), PROBLEMS)
def test_problems_say_where(template: str, says: str) -> None:
    assert says in (page_template.problem(template) or "")


def test_what_parses_passes() -> None:
    for template in (
        CLOUDFLARE_STYLE,
        "",
        "plain",
        "{{! a comment }}{{.}}",
        "{{=<% %>=}}<% waitTime %>",
    ):
        assert page_template.problem(template) is None, template


def test_at_most_64_kb_counted_in_utf_8() -> None:
    """The limit is in bytes: 64 KB of ASCII passes, as many characters of three bytes
    each do not; the setting refuses it by name."""
    assert page_template.problem("x" * 65_536) is None
    assert "at most 65,536 bytes" in (page_template.problem("€" * 30_000) or "")
    with pytest.raises(InvalidSetting, match="page_template must be at most 65,536 bytes"):
        BY_NAME["page_template"].check("€" * 30_000)


def test_at_most_1000_tags() -> None:
    """Each tag costs at every render: a template has at most 1,000."""
    assert page_template.problem("{{position}}" * 1000) is None
    assert "has 1,001 tags; at most 1,000" in (page_template.problem("{{position}}" * 1001) or "")


def test_the_setting_keeps_tabs_and_line_breaks() -> None:
    """A template is markup: tabs and CR LF are fine (CR LF read as LF)."""
    assert BY_NAME["page_template"].check("<p>\r\n\t{{waitTime}}</p>") == "<p>\n\t{{waitTime}}</p>"
    with pytest.raises(InvalidSetting, match="never closes"):
        BY_NAME["page_template"].check("{{#queueAll}}")


@pytest.mark.parametrize(
    ("origins", "ok"),
    [
        ("https://cdn.example.com", True),
        ("https://cdn.example.com/\nhttp://img.example.org:8080  https://*.example.net", True),
        ("https://cdn.example.com/logo.png", False),
        ("cdn.example.com", False),
        ("https://cdn.example.com; script-src *", False),
        ("'unsafe-inline'", False),
        (" ".join(f"https://c{i}.example.com" for i in range(21)), False),
    ],
)
def test_image_origins_are_origins(origins: str, ok: bool) -> None:
    """Each one a CSP source as it stands: scheme, host, port; nothing that could add
    a directive."""
    if ok:
        BY_NAME["page_asset_origins"].check(origins)
    else:
        with pytest.raises(InvalidSetting, match="page_asset_origins"):
            BY_NAME["page_asset_origins"].check(origins)


def test_every_variable_is_documented() -> None:
    """docs/templates.md lists every variable the panel lists."""
    guide = (Path(__file__).parents[2] / "docs" / "templates.md").read_text()
    for variable in page_template.VARIABLES:
        assert f"`{variable.name}`" in guide, variable.name
