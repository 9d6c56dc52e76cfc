"""The join card with a proof of work (issue 25): the form carries the solver's parts,
a join without a solution is refused with words (also for a browser without
JavaScript), a solved one joins, a visitor with a place never solves again."""

from __future__ import annotations

from typing import Any

from building import solved

from tests.web.conftest import Visitor


def solution(visitor: Visitor, room: str) -> str:
    return solved(visitor.get(f"/api/rooms/{room}/challenge").get_json())


def press(visitor: Visitor, room: str, altcha: str = "") -> Any:
    data = {"csrf_token": visitor.csrf(), "altcha": altcha}
    return visitor.client.post(f"/rooms/{room}/join", data=data)


def test_the_card_asks_for_the_puzzle_and_says_why_without_javascript(
    make_visitor: Any, make_room: Any
) -> None:
    """The card's form names the challenge route, the worker, a progress bar with a
    live text, and a noscript sentence; a room without the setting has none of it."""
    make_room("hall", capacity=1, challenge="on", challenge_cost=100)
    make_room("calm", capacity=1)
    ann = make_visitor("Ann")
    page = ann.get("/rooms/hall").get_data(as_text=True)
    assert 'data-challenge="/api/rooms/hall/challenge"' in page
    assert "js/challenge-worker.js" in page and "js/challenge.js" in page
    assert '<progress id="challenge-progress"' in page and 'aria-live="polite"' in page
    assert "<noscript>" in page and "That needs JavaScript" in page
    assert "challenge" not in ann.get("/rooms/calm").get_data(as_text=True)


def test_a_join_without_a_solution_is_refused_with_words(
    make_visitor: Any, make_room: Any, reports: Any
) -> None:
    """No solution or a wrong one: 403, the card again saying why, nobody joined."""
    make_room("hall", capacity=1, challenge="on", challenge_cost=100)
    ann = make_visitor("Ann")
    for altcha in ("", "bm9wZQ=="):
        refused = press(ann, "hall", altcha)
        assert refused.status_code == 403
        text = refused.get_data(as_text=True)
        assert "solve a small puzzle before you join" in text and "That needs JavaScript" in text
    assert reports.summary("hall").active == 0


def test_a_solved_join_goes_in_and_a_place_holder_never_solves_again(
    make_visitor: Any, make_room: Any, reports: Any
) -> None:
    """Solved: joined; pressing join again (the lobby's button) needs no new solution;
    the same solution in another browser is refused."""
    make_room("hall", capacity=1, challenge="on", challenge_cost=100)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    payload = solution(ann, "hall")
    assert press(ann, "hall", payload).status_code == 303
    assert reports.summary("hall").active == 1
    assert press(ann, "hall").status_code == 303  # a re-join: no puzzle
    assert press(bob, "hall", payload).status_code == 403  # used already
    assert press(bob, "hall", solution(bob, "hall")).status_code == 303
    assert reports.summary("hall").waiting == 1


def test_a_waitlist_sign_up_solves_it_too(make_visitor: Any, make_room: Any) -> None:
    """The sign-up form carries the puzzle; without a solution 403 with the words; with
    one the entry is made; the same browser signing up again solves nothing."""
    make_room("list", kind="waitlist", challenge="on", challenge_cost=100)
    ann = make_visitor("Ann")
    page = ann.get("/rooms/list").get_data(as_text=True)
    assert 'data-challenge="/api/rooms/list/challenge"' in page and "<noscript>" in page

    def sign_up(altcha: str = "") -> Any:
        form = {"name": "Ann", "email": "ann@example.org", "altcha": altcha,
                "csrf_token": ann.csrf()}  # fmt: skip
        return ann.client.post("/rooms/list/signup", data=form)

    refused = sign_up()
    assert refused.status_code == 403
    assert "solve a small puzzle before you join" in refused.get_data(as_text=True)
    assert sign_up(solution(ann, "list")).status_code == 303
    assert sign_up().status_code == 303  # the same browser again: its entry, no puzzle


def test_the_lobby_card_leads_to_the_puzzle(make_visitor: Any, make_room: Any) -> None:
    """A room with the puzzle on: its lobby card links to its page (which has the
    puzzle) instead of joining at once."""
    make_room("hall", capacity=1, challenge="on")
    page = make_visitor("Ann").get("/").get_data(as_text=True)
    assert 'id="go-hall" href="/rooms/hall"' in page
