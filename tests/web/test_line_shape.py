"""A waiting place's shape and figures (webapp/views/shared/place.py ``line_shape``,
``line_figures``): a poll that finds the page's shape answers the figures alone, and
waiting.js sets each ``data-figure`` from them. That is only right if two places of one
shape differ in nothing but their figures: the template, rendered for one and set with
the other's figures as the script sets them, must be the other's page. Hypothesis draws
pairs of places (the second a later poll of the first, or any other), in every queueing
order, room status, basis and language, and holds the template to it."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask, render_template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.web.conftest import running_app
from webapp.domain.estimate import Estimate, SeatChance, Shown
from webapp.domain.lobby import Standing
from webapp.domain.tickets import Ticket
from webapp.views.shared import place
from webapp.web.i18n import speaking

TEXT = re.compile(r'(<[^>]*\bdata-figure="([^"]+)"[^>]*>)([^<]*)<')
VALUE = re.compile(r'(<[^>]*\bdata-figure-value="([^"]+)"[^>]*>)')
PER_POLL = re.compile(r'\s(hx-get|hx-trigger|data-poll|data-position|data-wait)="[^"]*"')


@pytest.fixture(scope="module")
def app(redis_url: str) -> Iterator[Flask]:
    with running_app(redis_url) as app:
        rooms = app.extensions["services"].visits.rooms
        rooms.configure("hall", {"capacity": 3})
        rooms.configure("slow", {"capacity": 3, "typical_stay_seconds": 600})
        rooms.configure("own", {"capacity": 3, "page_template": "<p>n={{position}}</p>"})
        yield app


def standing(draw: Any, method: str, status: str, start: int, shown: bool) -> Standing:
    position = draw(st.integers(1, start))
    active, capacity = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    ticket = Ticket(
        token="t" * 22, state="waiting", position=position,
        waiting=draw(st.integers(position, position + 500)), active=active,
        capacity=capacity, room_status=status, now=1_000.0, why="", name="Bob", version=1,
        notice=draw(st.sampled_from(["", "Doors at <b>8</b> & more"])), support_code="ABC123",
    )  # fmt: skip
    waits = st.floats(0, 20_000, allow_nan=False)
    guess = draw(st.none() | st.builds(Estimate, waits, waits))
    if method in ("random", "passthrough"):  # no wait to estimate (Lobby.standing)
        guess = None
    chance = draw(st.none() | st.builds(SeatChance, st.floats(60, 600), st.floats(0, 1)))
    return Standing(
        ticket=ticket,
        estimate=guess,
        poll_after=draw(st.sampled_from([2.0, 5.0, 30.0])),
        shown=Shown(120.0, 9.0, 990.0) if shown else None,
        trend=draw(st.sampled_from([None, "slower", "faster"])),
        basis=None if guess is None else draw(st.sampled_from(["typical", "measured"])),
        method=method,
        chance=chance if method == "random" else None,
    )


@st.composite
def pairs(draw: Any) -> tuple[str, str, tuple[int, int], tuple[Standing, Standing]]:
    """A room, a language, and two places of it with where each joined."""
    method = draw(st.sampled_from(["fifo", "random", "passthrough", "reject"]))
    status = draw(st.sampled_from(["open", "paused", "closed"]))
    start = draw(st.integers(1, 40))
    room, language = (
        draw(st.sampled_from(["hall", "slow"])),
        draw(st.sampled_from(["en", "de", "pl"])),
    )
    then = draw(st.sampled_from([start, start + 1]))  # (one visitor's stays as it is)
    first = standing(draw, method, status, start, draw(st.booleans()))
    return room, language, (start, then), (first, standing(draw, method, status, then, True))


def shown_as(
    app: Flask, room: str, language: str, start: int, one: Standing
) -> tuple[str, dict[str, Any]]:
    """The waiting place's part for ``one`` as the page shows it, and its context."""
    with app.test_request_context("/"), speaking(language):
        context = place.line_context(room, one, polled=False, seen=None, start=start, email="")
        return render_template("_line_status.html", **context), context


def set_figures(page: str, figures: dict[str, str]) -> str:
    """What waiting.js does with a poll's figures: each data-figure's text, each
    data-figure-value's value."""
    page = TEXT.sub(lambda m: f"{m[1]}{html.escape(figures[m[2]], quote=False)}<", page)
    return VALUE.sub(lambda m: re.sub(r' value="[^"]*"', f' value="{figures[m[2]]}"', m[1]), page)


def plain(page: str) -> str:
    """A page without what each poll sets outside the figures (its next poll's URL,
    delay, place for the title, wait for the clock), and the text as a browser reads
    it (an apostrophe is one whether escaped or not)."""
    return html.unescape(PER_POLL.sub("", page))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drawn=pairs())
def test_two_places_of_one_shape_differ_only_in_their_figures(app: Flask, drawn: Any) -> None:
    room, language, (start, later), (one, other) = drawn
    first, first_context = shown_as(app, room, language, start, one)
    then, then_context = shown_as(app, room, language, later, other)
    if first_context["shape"] != then_context["shape"]:
        return  # the poll answers the whole part: nothing to hold
    assert plain(set_figures(first, then_context["figures"])) == plain(then)


def test_a_shape_changes_with_what_the_figures_do_not_say(app: Flask) -> None:
    """The shape names the language, the room's status and order, and whether a
    figure shows at all."""
    base = Standing(
        ticket=Ticket("t" * 22, "waiting", 2, 5, 3, 3, "open", 1_000.0, "", "Bob", 1, "", "ABC123"),
        estimate=Estimate(300.0, 900.0),
        poll_after=5.0,
        basis="measured",
    )
    shapes = {
        shown_as(app, "hall", language, start, one)[1]["shape"]
        for language, start, one in (
            ("en", 3, base),
            ("de", 3, base),
            ("en", 3, base._replace(ticket=base.ticket._replace(room_status="paused"))),
            ("en", 3, base._replace(method="random")),
            ("en", 3, base._replace(estimate=None, basis=None)),
            ("en", 3, base._replace(trend="slower")),
            ("en", 1, base._replace(ticket=base.ticket._replace(position=1))),
        )
    }
    assert len(shapes) == 7
    moved = base._replace(ticket=base.ticket._replace(position=1, waiting=4))
    assert (
        shown_as(app, "hall", "en", 3, moved)[1]["shape"]
        == shown_as(app, "hall", "en", 3, base)[1]["shape"]
    )
    # a room's own page prints its figures in its own words: each change is a new shape
    own, own_moved = (shown_as(app, "own", "en", 3, one) for one in (base, moved))
    assert "n=2" in own[0] and own[1]["shape"] != own_moved[1]["shape"]
