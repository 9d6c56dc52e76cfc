"""The control panel in a real browser, against gunicorn with 2 workers: an admin runs
a manual room while visitors wait in their own browsers; axe-core checks every panel
page; screenshots of the overview, a room page and its charts go to artifacts/."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from gunicorn_app import ARTIFACTS, Server, e2e_server
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e
PASSWORD = "e2e-panel-password"
SERIOUS = ("serious", "critical")


@pytest.fixture(scope="module")
def panel_server(redis_url: str) -> Iterator[Server]:
    with e2e_server(
        redis_url,
        "e2e-panel-gunicorn.log",
        WEBAPP_ADMIN_PASSWORD=PASSWORD,
        WEBAPP_SWEEP_INTERVAL="0.25",
        WEBAPP_WS_BEAT_SECONDS="1",
    ) as started:
        yield started


def log_in(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/admin/")
    page.get_by_label("Name").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/admin/$"))


def join(page: Any, server: Server, room: str, name: str) -> str:
    """A visitor follows the room's link, picks a name, waits; returns their code."""
    page.goto(f"{server.url}/rooms/{room}")
    page.get_by_label("Your display name").fill(name)
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#line-status .big")).to_be_visible()
    return str(page.locator(".support .code").inner_text())


def axe_check(page: Any, what: str) -> list[str]:
    """The serious or critical axe-core violations of the page, as text."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{what}: {v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(f"{n['target']}: {n.get('failureSummary', '')[:160]}" for n in v["nodes"][:3])
        for v in results.response["violations"]
        if v["impact"] in SERIOUS
    ]


def test_an_admin_runs_a_manual_room(panel_server: Server, person: Any) -> None:
    """Create a manual room; three wait; admit 2 from the panel (they go in unasked);
    the third sees place 1 and the notice; the admin finds a later joiner by support
    code and moves them to the front; the audit log shows it all."""
    server, name = panel_server, f"panel-{secrets.token_hex(3)}"
    admin = person()
    log_in(admin, server)
    admin.get_by_label("Name", exact=True).fill(name)
    admin.locator("#new-capacity").fill("1")
    admin.locator("#new-admission_mode").select_option("manual")
    admin.get_by_role("button", name="Create the room").click()
    expect(admin).to_have_url(re.compile(rf"/admin/rooms/{name}$"))

    visitors = [person() for _ in range(3)]
    for page, who in zip(visitors, ("Ann", "Bo", "Cy"), strict=True):
        join(page, server, name, who)
    expect(visitors[2].locator("#line-status .big")).to_have_text("3")

    admin.reload()
    admin.locator("#admit-count").fill("2")
    admin.get_by_label("Admit even if the room is full", exact=True).check()  # capacity 1
    admin.get_by_role("button", name="Admit", exact=True).click()
    expect(admin.get_by_role("status").or_(admin.locator(".flash"))).to_contain_text("Admitted 2")
    for page in visitors[:2]:  # let in by their next poll, with no click
        expect(page.get_by_role("heading", name=f"You are in {name}")).to_be_visible()
    expect(visitors[2].locator("#line-status .big")).to_have_text("1")

    admin.locator("#notice-text").fill("Doors close at ten")
    admin.get_by_role("button", name="Broadcast").click()
    expect(visitors[2].locator("#notice")).to_contain_text("Doors close at ten")
    expect(visitors[0].locator("#notice")).to_contain_text("Doors close at ten")  # socket

    late = person()
    code = join(late, server, name, "Dee")
    expect(late.locator("#line-status .big")).to_have_text("2")
    admin.locator("#line-q").fill(code.lower())
    admin.get_by_role("button", name="Search").click()
    admin.get_by_role("button", name=re.compile(r"^Move to front\W+Dee")).click()
    expect(late.locator("#line-status .big")).to_have_text("1")
    expect(visitors[2].locator("#line-status .big")).to_have_text("2")

    admin.goto(f"{server.url}/admin/rooms/{name}/audit")
    log = admin.locator("main")
    for text in ("create", "admit", "notice", "move", code):
        expect(log).to_contain_text(re.compile(text, re.IGNORECASE))
    assert log.inner_text().count("Ann") >= 1 and "Bo" in log.inner_text()


def test_every_panel_page_passes_axe_and_is_photographed(panel_server: Server, person: Any) -> None:
    """Login, overview, a busy room page and its audit log: no serious or critical axe
    violation at 390 and 1280 px, light and dark; screenshots kept to look at."""
    server, name = panel_server, f"busy-{secrets.token_hex(3)}"
    server_admin = server.admin(name, capacity=3)
    assert server_admin["capacity"] == 3
    for _ in range(12):
        server.api("POST", f"/api/rooms/{name}/join")
    ARTIFACTS.mkdir(exist_ok=True)
    found: list[str] = []
    for width in (390, 1280):
        page = person(width=width)
        page.goto(f"{server.url}/admin/login")
        found += axe_check(page, f"login {width}")
        log_in(page, server)
        pages = {
            "overview": "/admin/",
            "room": f"/admin/rooms/{name}",
            "audit": f"/admin/rooms/{name}/audit",
        }
        for what, path in pages.items():
            page.goto(server.url + path)
            page.screenshot(path=str(ARTIFACTS / f"admin-{what}-{width}.png"), full_page=True)
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                found += axe_check(page, f"{what} {width} {scheme}")
            page.emulate_media(color_scheme="light")
        page.goto(f"{server.url}/admin/rooms/{name}")
        chart = page.locator("svg").first
        expect(chart).to_be_visible()
        chart.screenshot(path=str(ARTIFACTS / f"admin-chart-{width}.png"))
    assert not found, "\n".join(found)
