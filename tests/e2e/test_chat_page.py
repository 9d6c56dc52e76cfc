"""Chat on the room page, in a real browser, against gunicorn with 2 workers."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
import visiting
import websocket
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

TEXTS = "#messages .message .text"
HIDE = """
Object.defineProperty(document, "hidden", {configurable: true, get: () => HIDDEN});
document.dispatchEvent(new Event("visibilitychange"));
"""


def enter(page: Any, server: Any, room: str, name: str) -> None:
    """Follows a shared link to the room and joins, picking a display name on the way."""
    visiting.enter(page, server.url, room, name)


def in_room(page: Any, room: str) -> None:
    expect(page.get_by_role("heading", name=f"You are in {room}")).to_be_visible()
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")


def say(page: Any, text: str) -> None:
    """Types a message into the box and presses Enter."""
    box = page.get_by_label("Your message")
    box.fill(text)
    box.press("Enter")
    expect(box).to_have_value("")


def texts(page: Any) -> list[str]:
    return [t.replace("\r\n", "\n") for t in page.locator(TEXTS).all_inner_texts()]


def seen_everywhere(pages: list[Any], expected: list[str]) -> None:
    """Every page shows exactly these messages, in this order."""
    for page in pages:
        expect(page.locator(TEXTS)).to_have_text(expected)


def test_three_people_chat_and_a_reload_misses_nothing(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Three visitors see every message in one order; a reload gets the rest once."""
    name = room(capacity=5, grace_seconds=10)
    ann, bob, cy = person(), person(), person(width=390, height=844)
    for page, who in ((ann, "Ann"), (bob, "Bob"), (cy, "Cy")):
        enter(page, server, name, who)
        in_room(page, name)
    expect(ann.get_by_text("No messages yet")).to_be_visible()

    expected: list[str] = []
    for page, text in (
        (ann, "Hello everyone!"),
        (bob, "Hi Ann, Bob here. How long did you wait?"),
        (cy, "Cy <b>here</b> & <script>alert(1)</script>"),  # shown as text, not run
        (ann, "About two minutes, the estimate was right."),
    ):
        say(page, text)
        expected.append(text)
        expect(page.locator(TEXTS)).to_have_count(len(expected))  # one order: wait for it
    seen_everywhere([ann, bob, cy], expected)
    assert cy.locator("#messages b, #messages script").count() == 0

    mine = ann.locator("#messages .message.mine .text")
    expect(mine).to_have_text([expected[0], expected[3]])
    expect(bob.locator("#messages .message.mine .text")).to_have_text([expected[1]])
    expect(ann.locator("#messages .message.mine .you-tag").first).to_have_text("you")
    times = bob.locator("#messages .message time")
    expect(times.first).to_have_text(re.compile(r"^\d{1,2}:\d\d(\s?[AP]M)?$"))  # the locale's
    assert re.match(r"\d{4}-\d\d-\d\dT", times.first.get_attribute("datetime") or "")

    # Shift+Enter is a new line, not a send.
    box = ann.get_by_label("Your message")
    box.fill("Two lines:")
    box.press("Shift+Enter")
    box.press_sequentially("the second one")
    expect(box).to_have_value("Two lines:\nthe second one")
    expect(ann.locator(TEXTS)).to_have_count(len(expected))
    box.press("Enter")
    expected.append("Two lines:\nthe second one")
    seen_everywhere([ann, bob, cy], expected)
    assert texts(bob)[-1] == "Two lines:\nthe second one"

    # Cy reloads while the others go on talking: afterwards every message, once.
    with cy.expect_navigation():
        cy.evaluate("setTimeout(() => location.reload(), 0)")
    for page, text in ((ann, "Sent while Cy reloads, 1"), (bob, "Sent while Cy reloads, 2")):
        say(page, text)
        expected.append(text)
        expect(page.locator(TEXTS)).to_have_count(len(expected))
    in_room(cy, name)
    seen_everywhere([ann, bob, cy], expected)
    ids = cy.locator("#messages .message").evaluate_all("els => els.map(e => e.dataset.id)")
    assert len(ids) == len(set(ids)) == len(expected)
    say(cy, "Back, and I missed nothing.")
    expected.append("Back, and I missed nothing.")
    seen_everywhere([ann, bob, cy], expected)

    # Bob scrolled up to read: a new message does not pull him down; a button offers it.
    log = bob.locator("#chat-log")
    log.evaluate("el => { el.scrollTop = 0; }")
    say(ann, "Bob, are you still there?")
    expected.append("Bob, are you still there?")
    seen_everywhere([bob], expected)
    jump = bob.get_by_role("button", name="1 new message")
    expect(jump).to_be_visible()
    assert log.evaluate("el => el.scrollTop") == 0
    unread = bob.locator("#messages .unread + .message .text")
    expect(unread).to_have_text("Bob, are you still there?")
    bob.screenshot(path=str(artifacts / "chat-unread-1280.png"), full_page=True)
    jump.click()
    expect(jump).to_be_hidden()
    assert log.evaluate("el => el.scrollHeight - el.scrollTop - el.clientHeight") < 48

    # In a background tab the title counts what came in.
    bob.evaluate(HIDE.replace("HIDDEN", "true"))
    say(ann, "Lunch?")
    say(cy, "Yes!")
    expected += ["Lunch?", "Yes!"]
    seen_everywhere([ann, bob, cy], expected)
    expect(bob).to_have_title(re.compile(r"^\(2\) "))
    expect(bob.locator("#messages .unread + .message .text")).to_have_text("Lunch?")
    bob.evaluate(HIDE.replace("HIDDEN", "false"))
    expect(bob).to_have_title(re.compile(r"^[^(]"))

    for page, width, height in ((cy, 390, 844), (ann, 1280, 860)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts / f"chat-{width}.png"), full_page=True)


def test_a_dropped_socket_reconnects_after_the_last_message(
    server: Any, room: Any, person: Any
) -> None:
    """A dropped socket comes back with ?after=<last id> and shows the gap once."""
    name = room(capacity=5, grace_seconds=10)
    ann, bob = person(), person()
    sockets: list[Any] = []

    def through(ws: Any) -> None:  # a real connection the test can cut
        sockets.append(ws)
        ws.connect_to_server()

    bob.route_web_socket(re.compile(r"/ws"), through)
    urls: list[str] = []
    bob.on("websocket", lambda ws: urls.append(ws.url))
    for page, who in ((ann, "Ann"), (bob, "Bob")):
        enter(page, server, name, who)
        in_room(page, name)
    say(ann, "first")
    expect(bob.locator(TEXTS)).to_have_text(["first"])
    last = bob.locator("#messages .message").last.get_attribute("data-id")

    bob.evaluate("window.drops = 0; window.roomSocket.on('socket.close', () => window.drops++)")
    sockets[-1].close(code=1011, reason="test drops the socket")
    bob.wait_for_function("window.drops === 1")
    say(ann, "second")  # while Bob is away (his retry waits at least 250 ms)
    say(ann, "third")
    expect(bob.locator("#connection")).to_have_attribute("data-state", "live")
    expect(bob.locator(TEXTS)).to_have_text(["first", "second", "third"])
    assert any(url.endswith(f"/ws?after={last}") for url in urls), urls


def test_refusals_are_shown_next_to_the_box(
    server: Any, room: Any, person: Any, artifacts: Path
) -> None:
    """Empty and over-long messages are refused with a reason; the text stays."""
    name = room(capacity=5)
    ann = person(width=390, height=844)
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    box = ann.get_by_label("Your message")
    error = ann.locator("#chat-error")

    box.press("Enter")
    expect(error).to_have_text("An empty message cannot be sent.")
    box.fill("x" * 2001)
    expect(ann.locator("#chat-count")).to_have_text("2,001 / 2,000 (1 too many)")
    box.press("Enter")
    expect(error).to_have_text("A message can be at most 2,000 characters; this one has 2,001.")
    expect(box).to_have_value("x" * 2001)
    ann.screenshot(path=str(artifacts / "chat-refused-390.png"), full_page=True)
    box.press("Backspace")
    expect(error).to_be_hidden()
    expect(ann.locator("#chat-count")).to_have_text("2,000 / 2,000")

    # The server's own refusal (a page that skipped the checks) shows up the same way.
    ann.evaluate("window.roomSocket.send({type: 'send', text: '   '})")
    expect(error).to_have_text("An empty message cannot be sent.")
    ann.get_by_role("button", name="Send").click()
    expect(ann.locator(TEXTS)).to_have_text(["x" * 2000])
    expect(ann.locator("#messages .message.mine")).to_have_count(1)

    # Past 20 messages in 10 seconds the server slows her down, and the page says so.
    ann.evaluate(
        "for (let i = 0; i < 20; i++) window.roomSocket.send({type: 'send', text: 'r' + i})"
    )
    expect(error).to_contain_text("You are sending too fast: at most 20 messages every 10 seconds")
    expect(ann.locator(TEXTS)).to_have_count(20)


def test_too_many_sockets_stop_the_page_with_the_reason(
    server: Any, room: Any, person: Any
) -> None:
    """Over the visitor's socket cap the page says why and does not reconnect."""
    name = room(capacity=5)
    ann = person()
    enter(ann, server, name, "Ann")
    in_room(ann, name)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in ann.context.cookies())
    url = server.url.replace("http://", "ws://") + f"/rooms/{name}/ws"
    held: list[Any] = []
    ann.goto("about:blank")  # the page's socket closes; five others take every slot
    try:
        while len(held) < 5:
            ws = websocket.create_connection(
                url, header=[f"Cookie: {cookie}"], origin=server.url, timeout=10
            )
            try:
                # room.state: this one counts. A refused socket (the page's slot is not
                # released yet) is closed by the server: recv() raises or returns "".
                counted = bool(ws.recv())
            except websocket.WebSocketException:
                counted = False
            if counted:
                held.append(ws)
            else:
                ws.shutdown()  # type: ignore[no-untyped-call]
                ann.wait_for_timeout(100)
        urls: list[str] = []
        ann.on("websocket", lambda ws: urls.append(ws.url))
        ann.goto(f"{server.url}/rooms/{name}")
        expect(ann.get_by_role("alert").first).to_contain_text("too many open connections")
        expect(ann.locator("#connection")).to_have_attribute("data-state", "ended")
        expect(ann.get_by_label("Your message")).to_be_disabled()
        ann.wait_for_timeout(1200)  # a reconnect would come after 250 to 500 ms
        assert len(urls) == 1, urls
    finally:
        for ws in held:
            with contextlib.suppress(websocket.WebSocketException, OSError):
                ws.close(timeout=1)
            ws.shutdown()  # type: ignore[no-untyped-call]  # frees it even if close failed
