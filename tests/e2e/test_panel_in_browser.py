"""The control panel in a real browser, against gunicorn with 2 workers: an admin runs
a manual room while visitors wait in their own browsers; axe-core checks every panel
page; screenshots of the overview, a room page and its charts go to artifacts/."""

from __future__ import annotations

import json
import re
import secrets
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import visiting
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
    visiting.enter(page, server.url, room, name)
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
    # let in by their next poll, with no click: with a first estimate (the typical stay)
    # a page polls at most every half check-in window (15 s)
    for page in visitors[:2]:
        expect(page.get_by_role("heading", name=f"You are in {name}")).to_be_visible(timeout=20_000)
    expect(visitors[2].locator("#line-status .big")).to_have_text("1")

    admin.locator("#notice-text").fill("Doors close at ten")
    admin.get_by_role("button", name="Broadcast").click()
    expect(visitors[2].locator("#notice")).to_contain_text("Doors close at ten", timeout=20_000)
    expect(visitors[0].locator("#notice")).to_contain_text("Doors close at ten")  # socket

    late = person()
    code = join(late, server, name, "Dee")
    expect(late.locator("#line-status .big")).to_have_text("2")
    admin.locator("#line-q").fill(code.lower())
    admin.get_by_role("button", name="Search").click()
    admin.get_by_role("button", name=re.compile(r"^Move to front\W+Dee")).click()
    expect(late.locator("#line-status .big")).to_have_text("1", timeout=20_000)  # next poll
    expect(visitors[2].locator("#line-status .big")).to_have_text("2", timeout=20_000)

    admin.goto(f"{server.url}/admin/rooms/{name}/audit")
    log = admin.locator("main")
    for text in ("create", "admit", "notice", "move", code):
        expect(log).to_contain_text(re.compile(text, re.IGNORECASE))
    assert log.inner_text().count("Ann") >= 1 and "Bo" in log.inner_text()


def test_every_panel_page_passes_axe_and_is_photographed(panel_server: Server, person: Any) -> None:
    """Login, overview, a busy room page (with seats offered and not taken yet), its
    audit log, its plan and a lottery's page: no serious or critical axe violation at 390 and
    1280 px, light and dark; screenshots kept to look at."""
    server, name = panel_server, f"busy-{secrets.token_hex(3)}"
    server_admin = server.admin(name, capacity=3)
    assert server_admin["capacity"] == 3
    for _ in range(12):
        server.api("POST", f"/api/rooms/{name}/join")
    server.admin(name, capacity=5)  # two seats offered to pages that are not open
    lottery = f"draw-{secrets.token_hex(3)}"
    server.admin(lottery, kind="waitlist", ordering="lottery")
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
            "plan": f"/admin/rooms/{name}/plan?total=5000&stock=3000",
            "waitlist": f"/admin/rooms/{lottery}",
            "create-waitlist": "/admin/?kind=waitlist",
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


# The room page's grids (the page's two parts, the actions' cards, the charts): each
# column in use, and no item far shorter than its row, which leaves the column beside
# the rest of that row empty.
EMPTY_COLUMNS = """() => {
  const found = [];
  for (const grid of document.querySelectorAll('.admin-grid, .admin-side, .charts')) {
    const style = getComputedStyle(grid);
    if (style.display !== 'grid') continue;
    const tracks = style.gridTemplateColumns.split(' ').filter(w => parseFloat(w) > 0);
    const boxes = [...grid.children].map(c => [c.className, c.getBoundingClientRect()])
      .filter(([, box]) => box.height > 0);
    const lefts = new Set(boxes.map(([, box]) => Math.round(box.left)));
    if (lefts.size < tracks.length) {
      found.push(`${grid.className}: ${lefts.size} of ${tracks.length} columns used`);
    }
    for (const [name, box] of boxes) {
      const row = boxes.filter(([, other]) => Math.abs(other.top - box.top) < 2);
      const empty = Math.max(...row.map(([, other]) => other.bottom)) - box.bottom;
      if (empty > 48) found.push(`${grid.className} > ${name}: ${Math.round(empty)} px empty`);
    }
  }
  return found;
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_room_page_leaves_no_column_empty(
    panel_server: Server, person: Any, width: int
) -> None:
    """A live room with nobody in it, a busy one and a waitlist, at 1280 and 390 px: every
    column of the page's grids holds something, and nothing in them stands beside a
    stretch of empty column (the line's column was empty beside the actions' before)."""
    server, tag = panel_server, secrets.token_hex(3)
    rooms = {"empty": f"empty-{tag}", "busy": f"busy-{tag}", "waitlist": f"list-{tag}"}
    server.admin(rooms["empty"], capacity=3)
    server.admin(rooms["busy"], capacity=3)
    for _ in range(8):
        server.api("POST", f"/api/rooms/{rooms['busy']}/join")
    server.admin(rooms["waitlist"], kind="waitlist")
    admin = person(width=width)
    log_in(admin, server)
    found = []
    for what, room in rooms.items():
        admin.goto(f"{server.url}/admin/rooms/{room}")
        found += [f"{what} at {width} px: {gap}" for gap in admin.evaluate(EMPTY_COLUMNS)]
    assert not found, "\n".join(found)


def api_get(server: Server, room: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.url}/api/admin/rooms/{room}",
        headers={"Authorization": f"Bearer {server.admin_token}"},
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        answer: dict[str, Any] = json.load(reply)
        return answer


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_the_create_form_follows_the_kind_and_the_admin_s_clock(
    panel_server: Server, browser: Any, javascript: bool
) -> None:
    """Choosing "Waitlist" hides the live room's fields and shows the waitlist's, with
    or without JavaScript; a duration is typed in days and a time on the admin's own
    clock (New York here), which the form names; without the script it is UTC, and the
    form says so. The room is made with exactly that."""
    server, name = panel_server, f"kinds-{secrets.token_hex(3)}"
    context = browser.new_context(
        viewport={"width": 390, "height": 860},
        java_script_enabled=javascript,
        timezone_id="America/New_York",
    )
    try:
        admin = context.new_page()
        log_in(admin, server)
        expect(admin.locator("#new-capacity")).to_be_visible()
        expect(admin.locator("#new-claim_seconds")).to_be_hidden()
        admin.get_by_label("Waitlist", exact=True).check()
        expect(admin.locator("#new-capacity")).to_be_hidden()
        expect(admin.locator("#new-grace_seconds")).to_be_hidden()
        expect(admin.locator("#new-claim_seconds")).to_be_visible()
        zone = "America/New_York" if javascript else "UTC"
        expect(admin.locator("label[for=new-draw_at]")).to_contain_text(f"time in {zone}")
        admin.get_by_label("Name", exact=True).fill(name)
        admin.locator("#new-ordering").select_option("lottery")
        admin.locator("#new-claim_seconds").fill("3")
        admin.get_by_label("Time to claim: unit").select_option("days")
        admin.locator("#new-draw_at").fill("2030-06-01T18:00")
        if javascript:  # the UTC time beside the field, as it is typed
            expect(admin.locator("#new-draw_at-utc")).to_have_text("In UTC: 2030-06-01 22:00:00")
        admin.get_by_role("button", name="Create the room").click()
        expect(admin).to_have_url(re.compile(rf"/admin/rooms/{name}$"))
        expect(admin.locator("#setting-capacity")).to_be_hidden()
        expect(admin.locator("#setting-claim_seconds")).to_have_value("3")
        made = api_get(server, name)
        utc_hour = 22 if javascript else 18
        drawn_at = int(datetime(2030, 6, 1, utc_hour, 0, tzinfo=UTC).timestamp())
        assert (made["kind"], made["ordering"]) == ("waitlist", "lottery")
        assert (made["claim_seconds"], made["draw_at"]) == (3 * 86400, drawn_at)
        assert made["capacity"] == 10  # the hidden live field was not read
    finally:
        context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_remove_and_end_seat_ask_once(panel_server: Server, person: Any, javascript: bool) -> None:
    """ "Remove" and "End seat" change nothing by themselves: each opens its one
    confirming button, which does it (a disclosure: no script needed)."""
    server, name = panel_server, f"ask-{secrets.token_hex(3)}"
    server.admin(name, capacity=1)
    seated = server.api("POST", f"/api/rooms/{name}/join")
    waiting = server.api("POST", f"/api/rooms/{name}/join")
    admin = person(javascript=javascript)
    log_in(admin, server)
    admin.goto(f"{server.url}/admin/rooms/{name}")
    admin.locator("#line summary", has_text="Remove").click()
    assert server.api("GET", f"/api/rooms/{name}/qsize")["len"] == 1  # asked, not done
    admin.get_by_role("button", name=re.compile(rf"^Yes, remove {waiting['support_code']}")).click()
    expect(admin.locator(".flash")).to_contain_text("Removed")
    assert server.api("GET", f"/api/rooms/{name}/qsize")["len"] == 0
    admin.locator("#seated summary", has_text="End seat").click()
    assert server.api("GET", f"/api/rooms/{name}/qsize")["active"] == 1
    end = re.compile(rf"Yes, end the seat of {seated['support_code']}")
    admin.get_by_role("button", name=end).click()
    expect(admin.locator(".flash")).to_contain_text("Ended the seat")
    assert server.api("GET", f"/api/rooms/{name}/qsize")["active"] == 0
