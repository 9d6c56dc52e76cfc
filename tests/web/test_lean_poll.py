"""The waiting page's poll on the lean path (issue 32, webapp/views/visitor/lean_poll.py):
htmx's poll of a place still waiting is answered without Flask's request, and what it
answers is what Flask's view answers: the same partial, word for word in the visitor's
language, and the same headers. Everything else goes on to Flask. The app's clock
stands still here, so a poll answered twice is answered alike."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder, run_wsgi_app

from tests.api.conftest import flask_requests
from tests.web.conftest import Visitor, running_app
from webapp.views.visitor import line

POLL = re.compile(r'hx-get="(/[^"]*rooms/hall/line\?[^"]+)"')
SHAPE = re.compile(r'data-shape="([0-9a-f]+)"')
HTMX = {"HX-Request": "true"}


@pytest.fixture
def app(redis_url: str, r: Any, tmp_path: Any, clock: Any) -> Iterator[Flask]:
    with running_app(redis_url, DATA_DIR=str(tmp_path), CLOCK=clock) as app:
        yield app


@pytest.fixture
def flask_saw(app: Flask) -> list[str]:
    return flask_requests(app)


def waiting(app: Flask, make_visitor: Any, make_room: Any, **settings: Any) -> tuple[Visitor, str]:
    """Bob, second in a room of one seat, and his waiting page's poll URL."""
    make_room("hall", **{"capacity": 1, "typical_stay_seconds": 60, **settings})
    make_visitor("Ann").join("hall")
    bob = make_visitor("Bob")
    html = bob.join("hall").get_data(as_text=True)
    found = POLL.search(html)
    assert found, "no poll on the waiting page"
    return bob, found.group(1).replace("&amp;", "&")


def flasks(app: Flask, bob: Visitor, url: str, **headers: str) -> str:
    """What Flask's view answers to the same poll (its partial)."""
    cookie = bob.client.get_cookie("session")
    assert cookie is not None
    headers = {**HTMX, "Cookie": f"session={cookie.value}", **headers}
    with app.test_request_context(url, headers=headers):
        answer = app.make_response(line.status("hall"))
        return answer.get_data(as_text=True)


def compared(response: Any) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k != "Date"}


def test_a_waiting_places_poll_is_answered_without_flask_as_flask_answers_it(
    app: Flask, make_visitor: Any, make_room: Any, flask_saw: list[str]
) -> None:
    bob, url = waiting(app, make_visitor, make_room)
    flask_saw.clear()
    lean = bob.get(url, htmx=True)
    assert flask_saw == [], "the poll went through Flask"
    html = lean.get_data(as_text=True)
    assert (
        lean.status_code == 200
        and 'data-figure="position">1<' in html
        and "Set-Cookie" not in lean.headers
    )
    assert html == flasks(app, bob, url)  # the same partial, word for word
    head = bob.client.head(url, headers=HTMX)  # Flask answers HEAD: its headers
    assert flask_saw == [f"HEAD {url.split('?')[0]}"]
    assert compared(lean) == compared(head)  # the type, length, no-store, Vary, security
    following = POLL.search(html)  # the next poll: the figure it shows travels with it
    assert following and "shown=" in following.group(1)
    again = bob.get(following.group(1).replace("&amp;", "&"), htmx=True)
    assert again.status_code == 200 and flask_saw == [f"HEAD {url.split('?')[0]}"]


def test_a_poll_that_finds_the_pages_shape_is_answered_its_figures_alone(
    app: Flask, make_visitor: Any, make_room: Any, flask_saw: list[str]
) -> None:
    """waiting.js sends the shape its page shows (``X-Line-Shape``). While it holds, the
    answer is the figures as JSON, without Flask, as Flask's view answers them; a shape
    the page does not show (an old one, a made-up one) gets the whole partial."""
    bob, url = waiting(app, make_visitor, make_room)
    shape = SHAPE.search(bob.get(url, htmx=True).get_data(as_text=True))
    assert shape
    asks = {"X-Line-Shape": shape.group(1)}
    flask_saw.clear()
    lean = bob.get(url, htmx=True, headers=asks)
    assert flask_saw == [] and lean.status_code == 200 and lean.is_json
    update = lean.get_json()
    assert update["shape"] == shape.group(1) and update["position"] == update["seen"] == 1
    assert update["figures"]["position"] == "1" and update["figures"]["in-line"] == "1"
    assert update["poll"] > 0 and update["notice"] == "" and update["announce"] == ""
    assert lean.headers["Cache-Control"] == "no-store" and "Set-Cookie" not in lean.headers
    assert lean.headers["Vary"] == "Accept-Language, X-Line-Shape, Cookie"
    assert lean.get_data(as_text=True) == flasks(app, bob, url, **asks)  # Flask's, byte for byte
    head = bob.client.head(url, headers={**HTMX, **asks})
    assert compared(lean) == compared(head)
    # the organisers' notice and a move up the line come with the figures
    app.extensions["services"].visits.rooms.set_notice("hall", "Doors at 8", "ada")
    cara = make_visitor("Cara")
    cara_url = POLL.search(cara.join("hall").get_data(as_text=True))
    assert cara_url
    cara_url_text = cara_url.group(1).replace("&amp;", "&")
    cara_shape = SHAPE.search(cara.get(cara_url_text, htmx=True).get_data(as_text=True))
    assert cara_shape
    bob.get("/rooms/hall/leave")  # the form's page; the POST leaves
    bob.client.post("/rooms/hall/leave", data={"csrf_token": bob.csrf()})
    moved = cara.get(cara_url_text, htmx=True, headers={"X-Line-Shape": cara_shape.group(1)})
    assert moved.is_json, "moving up keeps the page's shape"
    figures = moved.get_json()
    assert figures["figures"]["position"] == "1" and figures["notice"] == "Doors at 8"
    assert figures["announce"] == "You are now number 1 in line."
    assert "You have moved up 1 of the 1 place" in figures["figures"]["progress-text"]
    for stale in ("0" * 8, "", "<script>"):
        whole = bob.get(url, htmx=True, headers={"X-Line-Shape": stale})
        assert whole.status_code in (200, 303) and not whole.is_json


@pytest.mark.parametrize(
    ("headers", "cookie", "words"),
    [
        ({"Accept-Language": "de-DE,de;q=0.9"}, None, "In der Schlange"),
        ({"Accept-Language": "en-GB,en;q=0.9"}, "fr", "En attente dans la file"),
        ({"Accept-Language": "ar"}, None, "في الطابور"),
        ({"Accept-Language": "xx, *;q=0.1"}, "nonsense", "Waiting in line"),
    ],
)
def test_the_poll_speaks_the_visitors_language(
    app: Flask,
    make_visitor: Any,
    make_room: Any,
    flask_saw: list[str],
    headers: dict[str, str],
    cookie: str | None,
    words: str,
) -> None:
    """Accept-Language and the picker's cookie choose the words, as Flask's selector
    does; the wait is written in that language too."""
    bob, url = waiting(app, make_visitor, make_room)
    if cookie is not None:
        bob.client.set_cookie("lang", cookie)
    flask_saw.clear()
    lean = bob.client.get(url, headers={**HTMX, **headers})
    assert flask_saw == []
    html = lean.get_data(as_text=True)
    assert words in html
    lang = {"Cookie": f"lang={cookie}"} if cookie else {}
    session = bob.client.get_cookie("session")
    assert session is not None
    both = {**headers, "Cookie": "; ".join(filter(None, [f"session={session.value}",
                                                         lang.get("Cookie", "")]))}  # fmt: skip
    assert html == flasks(app, bob, url, **both)


def test_anything_but_a_waiting_place_goes_on_to_flask(
    app: Flask, make_visitor: Any, make_room: Any, flask_saw: list[str], visits: Any
) -> None:
    """Not htmx's, no cookie, a forged cookie, another page's place, an ended place and
    a place whose turn came: Flask answers each, as before."""
    bob, url = waiting(app, make_visitor, make_room)
    path = url.split("?")[0]
    flask_saw.clear()
    whole = bob.get(url)  # a reload without JavaScript: the whole page
    assert whole.status_code == 200 and "<html" in whole.get_data(as_text=True)
    stranger = Visitor(app.test_client())
    assert stranger.get(url, htmx=True).status_code == 200  # no session: Flask's "unknown"
    forged = Visitor(app.test_client())
    forged.client.set_cookie("session", "eyJ0aWNrZXRzIjp7fX0.forged.signature")
    assert forged.get(url, htmx=True).status_code == 200
    other = re.sub(r"t=[0-9a-f]+", "t=000000000000", url)
    assert "ended" in bob.get(other, htmx=True).get_data(as_text=True)  # another page's
    assert flask_saw == [f"GET {path}"] * 4
    # its turn: Ann leaves, the seat is offered to Bob; Flask shows the moment
    flask_saw.clear()
    ann_token = next(iter(app.extensions["services"].reports.participants("hall"))).token
    visits.end("hall", ann_token)
    turn = bob.get(url, htmx=True)
    assert "It's your turn" in turn.get_data(as_text=True) and flask_saw == [f"GET {path}"]
    # an ended place (removed by the organisers): Flask marks the session and says so
    flask_saw.clear()
    bob_token = bob.client.get_cookie("session")
    assert bob_token is not None
    for each in app.extensions["services"].reports.participants("hall"):
        visits.end("hall", each.token, why="removed", who="ada")
    ended = bob.get(url, htmx=True).get_data(as_text=True)
    assert 'data-state="ended"' in ended and flask_saw == [f"GET {path}"]


def test_a_room_with_its_own_page_is_flasks(
    app: Flask, make_visitor: Any, make_room: Any, flask_saw: list[str]
) -> None:
    """A room with its own page template (its policy, its controls) goes on to Flask."""
    bob, url = waiting(app, make_visitor, make_room, page_template="<p>n={{position}}</p>")
    flask_saw.clear()
    answer = bob.get(url, htmx=True)
    assert "n=1" in answer.get_data(as_text=True) and flask_saw == [f"GET {url.split('?')[0]}"]


def test_a_drops_stock_is_shown_as_flask_shows_it(
    app: Flask, make_visitor: Any, make_room: Any, flask_saw: list[str]
) -> None:
    bob, url = waiting(app, make_visitor, make_room, stock=40)
    flask_saw.clear()
    lean = bob.get(url, htmx=True)
    html = lean.get_data(as_text=True)
    assert flask_saw == [] and "40" in html
    assert html == flasks(app, bob, url)


def test_the_poll_keeps_the_apps_prefix(redis_url: str, r: Any, tmp_path: Any, clock: Any) -> None:
    """Behind a proxy that mounts the app under /queue, the next poll's URL has it."""
    prefixed = {"X-Forwarded-Prefix": "/queue", **HTMX}
    with running_app(redis_url, PROXY_COUNT=1, DATA_DIR=str(tmp_path), CLOCK=clock) as app:
        saw = flask_requests(app)
        app.extensions["services"].rooms.configure("hall", {"capacity": 1})
        Visitor(app.test_client()).named("Ann").join("hall")
        bob = Visitor(app.test_client()).named("Bob")
        html = bob.join("hall").get_data(as_text=True)
        found = POLL.search(html)
        assert found and found.group(1).startswith("/rooms/hall/line")  # no proxy: none
        saw.clear()
        answer = bob.client.get(found.group(1).replace("&amp;", "&"), headers=prefixed)
        nxt = POLL.search(answer.get_data(as_text=True))
        assert saw == [] and nxt and nxt.group(1).startswith("/queue/rooms/hall/line?")


def test_made_up_polls_are_answered_never_with_a_500(
    app: Flask, make_visitor: Any, make_room: Any
) -> None:
    """An outsider's polls: made-up arguments, cookies and paths get an answer (the
    place, an ended state, a 404), never a server error, and the place stays alive."""
    bob, url = waiting(app, make_visitor, make_room)
    path, _, query = url.partition("?")
    made_up = [
        f"{path}?t=",
        f"{path}?t={'a' * 5000}",
        f"{path}?{query}&seen=NaN",
        f"{path}?{query}&seen={'9' * 400}",
        f"{path}?{query.replace('seen=1', 'seen=-7')}",
        f"{path}?{query}&shown=%FF%FE",
        f"{path}?{query}&t=second-t-ignored",
        f"{path}?t=%00%0A",
        "/rooms/h%C3%A9/line?t=abc",
        "/rooms/../line?t=abc",
        "/rooms//line?t=abc",
        f"/rooms/{'x' * 300}/line?t=abc",
    ]
    for each in made_up:
        answer = bob.get(each, htmx=True)
        assert answer.status_code < 500, (each, answer.status_code)
    for cookie in ("", "x" * 8000, "..", "e30.AAAA.BBBB", "\u00e9t\u00e9"):
        answer = app.test_client().get(url, headers={**HTMX, "Cookie": f"session={cookie}"})
        assert answer.status_code < 500, cookie
    for raw in ("session=\xe9", "lang=\xe9\xe9; session=x", "\xff\xfe"):  # no UTF-8
        environ = EnvironBuilder(url, headers=HTMX).get_environ()
        environ["HTTP_COOKIE"] = raw  # as the server decodes bytes (the test client would not)
        _, status, _ = run_wsgi_app(app, environ, buffered=True)
        assert int(status.split()[0]) < 500, raw
    assert 'data-figure="position">1<' in bob.get(url, htmx=True).get_data(as_text=True)


def test_a_lean_poll_is_timed_as_the_views(
    redis_url: str, r: Any, tmp_path: Any, clock: Any
) -> None:
    """/metrics counts a poll answered before Flask under the view's endpoint."""
    from tests.web.test_metrics import TOKEN, scrape, value

    config = {"ADMIN_TOKEN": TOKEN, "DATA_DIR": str(tmp_path), "CLOCK": clock}
    with running_app(redis_url, **config) as app:
        saw = flask_requests(app)
        app.extensions["services"].rooms.configure("hall", {"capacity": 1})
        Visitor(app.test_client()).named("Ann").join("hall")
        bob = Visitor(app.test_client()).named("Bob")
        found = POLL.search(bob.join("hall").get_data(as_text=True))
        assert found
        saw.clear()
        for _ in range(3):
            assert bob.get(found.group(1).replace("&amp;", "&"), htmx=True).status_code == 200
        assert saw == []
        labels = {"endpoint": "line.status", "method": "GET", "status": "2xx"}
        assert value(scrape(app), "waitingroom_http_request_duration_seconds_count", **labels) == 3


def test_a_redis_failure_is_answered_at_once_by_the_outage_page(
    app: Flask, make_visitor: Any, make_room: Any, monkeypatch: Any
) -> None:
    """Redis failing under the lean poll: Flask answers the outage (503, the poll's
    partial retries) without asking Redis again, so a frozen Redis costs the poll one
    timeout, not two."""
    from redis.exceptions import TimeoutError as RedisTimeout

    bob, url = waiting(app, make_visitor, make_room)
    visits = app.extensions["services"].visits
    looks: list[str] = []

    def frozen(room: str, token: str, holder: Any, shown: Any = None) -> Any:
        looks.append(room)
        raise RedisTimeout("Timeout reading from socket")

    monkeypatch.setattr(visits, "page_place", frozen)
    answer = bob.get(url, htmx=True)
    assert answer.status_code == 503 and "Retry-After" in answer.headers
    assert looks == ["hall"]  # (the failure answers before the recording hook runs)


def test_an_outsiders_shape_gets_nothing_of_another_place(
    app: Flask, make_visitor: Any, make_room: Any, r: Any
) -> None:
    """The shape names the place it was made for: another visitor's shape sent with
    one's own cookie gets one's own partial, never the other's figures; a stranger
    without a session, or with a forged one, sending it gets no figures either, and
    changes nothing in Redis."""
    bob, url = waiting(app, make_visitor, make_room)
    bob_shape = SHAPE.search(bob.get(url, htmx=True).get_data(as_text=True))
    assert bob_shape
    cara = make_visitor("Cara")
    cara_url = POLL.search(cara.join("hall").get_data(as_text=True))
    assert cara_url
    cara_path = cara_url.group(1).replace("&amp;", "&")
    stolen = {"X-Line-Shape": bob_shape.group(1)}
    answer = cara.get(cara_path, htmx=True, headers=stolen)
    assert not answer.is_json and 'data-figure="position">2<' in answer.get_data(as_text=True)
    before = {key: r.dump(key) for key in r.keys("*")}
    for cookie in ("", "session=eyJ0aWNrZXRzIjp7fX0.forged.signature"):
        stranger = app.test_client().get(url, headers={**HTMX, **stolen, "Cookie": cookie})
        assert stranger.status_code < 500 and not stranger.is_json
        assert "Bob" not in stranger.get_data(as_text=True)
    assert {key: r.dump(key) for key in r.keys("*")} == before
