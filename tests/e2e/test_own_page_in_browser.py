"""A room's own waiting page in a real browser against gunicorn (issue 30): a template
in Cloudflare's style shows the visitor's figures and follows them at every poll, its
script never runs and its images pass the Content-Security-Policy from the origins the
admin listed alone; the controls it places keep what is typed across polls and work by
keyboard; axe-clean at 390 and 1280 px. The panel's editor previews as it is typed.
Screenshots go to WEBAPP_SHOTS (default /work/shots/i30-template) when it exists."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import visiting
from gunicorn_app import Server, e2e_server
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e
TEMPLATE = (Path(__file__).parents[1] / "pages" / "cloudflare_style.html").read_text()
SHOTS = Path(os.environ.get("WEBAPP_SHOTS", "/work/shots/i30-template"))
PASSWORD = "e2e-own-page-password"
SERIOUS = ("serious", "critical")
LOGO = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="32" viewBox="0 0 120 32">'
    '<rect width="32" height="32" rx="6" fill="#b4461b"/><text x="40" y="23" '
    'font-family="Georgia" font-size="20" fill="#1d2b3a">Acme</text></svg>'
)


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[Server]:
    """The app under gunicorn with an admin account; short sweeps, so polls come fast."""
    with e2e_server(
        redis_url,
        "e2e-own-page-gunicorn.log",
        WEBAPP_ADMIN_PASSWORD=PASSWORD,
        WEBAPP_SWEEP_INTERVAL="0.25",
        WEB_THREADS="16",
    ) as started:
        started.mailer_says(ok=True)
        yield started


def with_logo(page: Any) -> Any:
    """The admin's image origin answers (the browser still asks the policy first)."""
    page.route(
        "https://cdn.acme.test/**",
        lambda route: route.fulfill(status=200, content_type="image/svg+xml", body=LOGO),
    )
    return page


def serious(page: Any) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    size, found = page.viewport_size, []
    for width, height in ((390, 844), (1280, 860)):
        page.set_viewport_size({"width": width, "height": height})
        found += [
            f"{width}: {v['id']} ({v['impact']}): "
            + ", ".join(str(n["target"]) for n in v["nodes"][:3])
            for v in Axe().run(page).response["violations"]
            if v["impact"] in SERIOUS
        ]
    page.set_viewport_size(size)
    return found


def shoot(page: Any, name: str, widths: tuple[int, ...] = (390, 1280)) -> None:
    if not SHOTS.is_dir():
        return
    size = page.viewport_size
    for width in widths:
        page.set_viewport_size({"width": width, "height": 844 if width < 600 else 860})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def test_a_cloudflare_template_lives_on_the_waiting_page(
    server: Server, room: Any, person: Any
) -> None:
    """Figures from the template's sections, updated by the poll; no script of the
    template runs; the logo loads from the listed origin; the email typed into the
    placed controls survives a poll with its focus; leaving works by keyboard."""
    name = room(capacity=1, dropout_seconds=6, title="Acme summer sale",
                page_template=TEMPLATE, page_asset_origins="https://cdn.acme.test")  # fmt: skip
    holder = server.api("POST", f"/api/rooms/{name}/join")
    assert holder["status"] == "admitted"
    bob = with_logo(person(width=390, height=844))
    errors: list[str] = []
    bob.on("pageerror", lambda error: errors.append(str(error)))
    visiting.enter(bob, server.url, name, "Bob")
    expect(bob.locator("#acme-position")).to_have_text("1")
    expect(bob.locator(".acme > h2")).to_have_text("Acme summer sale: you are in line")
    expect(bob.locator("#time-remaining")).to_contain_text("Your estimated wait time is")
    expect(bob.locator(".acme")).to_contain_text("with 0 ahead of you and 1 waiting")
    assert bob.evaluate("document.querySelector('.acme-logo').naturalWidth") == 120
    assert "pwned" not in bob.title() and bob.evaluate("typeof remainingEl") == "undefined"
    assert bob.locator("#page-controls").count() == 1  # placed by {{{controls}}}
    shoot(bob, "branded-waiting-page")

    email = bob.get_by_label("Also email me when it is my turn (optional)")
    email.fill("bob@example.com")
    email.focus()
    server.api("POST", f"/api/rooms/{name}/join")  # someone joins behind Bob
    expect(bob.locator(".acme")).to_contain_text(
        "with 0 ahead of you and 2 waiting", timeout=20_000
    )
    assert email.input_value() == "bob@example.com"  # the poll kept the controls as they were
    assert bob.evaluate("document.activeElement.name") == "email"
    assert "pwned" not in bob.title() and not errors

    assert serious(bob) == []

    bob.wait_for_load_state("domcontentloaded")  # the dialog's listener (deferred script)
    leave = bob.get_by_role("link", name="Leave the line")
    leave.focus()
    bob.keyboard.press("Enter")
    confirm = bob.get_by_role("dialog").get_by_role("button", name="Leave the line")
    expect(confirm).to_be_visible()
    confirm.focus()
    bob.keyboard.press("Enter")
    expect(bob.locator("#line-status")).to_have_attribute("data-state", "ended")


def log_in(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/admin/")
    page.get_by_label("Name").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/admin/$"))


def test_the_panel_previews_the_template_as_it_is_typed(
    server: Server, room: Any, person: Any
) -> None:
    """Both frames follow the textarea; a template that does not parse is refused on
    saving, saying where; a good one is saved."""
    name = room(capacity=5, title="Acme summer sale")
    admin = with_logo(person(width=1400, height=1000))
    log_in(admin, server)
    admin.goto(f"{server.url}/admin/rooms/{name}/page")
    box = admin.get_by_label("Template (at most 64 KB)")
    box.fill("<p id=typed>Number {{position}} of {{lineLength}}</p>")
    narrow = admin.frame_locator("#preview-narrow")
    wide = admin.frame_locator("#preview-wide")
    expect(narrow.locator("#typed")).to_have_text("Number 42 of 180")
    expect(wide.locator("#typed")).to_have_text("Number 42 of 180")
    box.fill(TEMPLATE)
    admin.get_by_label("Image origins").fill("https://cdn.acme.test")
    expect(narrow.locator("#acme-position")).to_have_text("42")
    expect(wide.locator(".acme > h2")).to_have_text("Acme summer sale: you are in line")
    shoot(admin, "panel-page-editor", widths=(1400,))
    assert serious(admin) == []

    box.fill("<p>{{#waitTimeKnown}}\n{{waitTim}}</p>")
    admin.get_by_role("button", name="Save the page").click()
    expect(admin.locator(".field-error")).to_contain_text(
        "uses {{waitTim}} at line 2, column 1, which is not a variable here"
    )
    box.fill(TEMPLATE)
    admin.get_by_role("button", name="Save the page").click()
    expect(admin.locator(".flash")).to_contain_text("Saved: Page template")
