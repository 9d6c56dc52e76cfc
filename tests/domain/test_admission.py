"""The one decision of a join (``Admission``, issue 33), against a plain-Python model:
whatever mix of joins an address sends (let in, refused for a bad email, a closed room,
a puzzle not solved, a line too long, or throttled), the joins let in are exactly the
model's, and only they count against the limit (issue 29: a refused join counts
against nothing)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.domain.admission import Admission, Joined, JoinPolicy, JoinRequest, PuzzleRequired
from webapp.domain.challenge import Challenges
from webapp.domain.identity import Identities
from webapp.domain.join_limits import JoinLimits, Throttled
from webapp.domain.refusals import InvalidInput, JoinRefused, RoomClosed
from webapp.redis.scripts import Scripts

LIMIT = 4  # joins a minute from one address
KINDS = ("ok", "bad email", "closed", "puzzle")  # "ok" past a line of 3: too long, a 503


def admission(r: Any, keys: Any, clock: Any, lobby: Any, reports: Any, visits: Any,
              waitlists: Any) -> Admission:  # fmt: skip
    policy = JoinPolicy((LIMIT, 60), (1000, 60), (LIMIT, 3600))
    return Admission(
        reports, visits, waitlists, Challenges(r, keys, "secret", clock),
        JoinLimits(r, keys, Scripts(r)), policy, Identities(r, keys), clock,
    )  # fmt: skip


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(KINDS), min_size=1, max_size=12))
def test_only_the_joins_let_in_count(r, keys, clock, lobby, reports, visits, waitlists, kinds):
    r.flushall()
    lobby.reports.cache.forget("hall")
    decide = admission(r, keys, clock, lobby, reports, visits, waitlists)
    visits.configure("hall", {"capacity": 1, "max_line_length": 3})
    counted, waiting = 0, 0  # the model: joins let in, and people in line
    for i, kind in enumerate(kinds):
        status = {"closed": "closed"}.get(kind, "open")
        challenge = "on" if kind == "puzzle" else "off"
        visits.configure("hall", {"status": status, "challenge": challenge})
        lobby.reports.cache.forget("hall")
        email = "not an address" if kind == "bad email" else ""
        joining = JoinRequest("hall", address="192.0.2.1", identity=f"p{i}", email=email)
        full = waiting >= 3
        try:
            outcome = decide.join(joining)
        except Throttled:
            assert counted == LIMIT  # the limits come before the puzzle and the engine
            continue
        except (InvalidInput, RoomClosed, JoinRefused):
            assert counted < LIMIT and (kind in ("bad email", "closed") or full), kind
            continue
        if kind == "puzzle":
            assert isinstance(outcome, PuzzleRequired)
            continue
        assert kind == "ok" and isinstance(outcome, Joined) and counted < LIMIT
        counted += 1
        waiting += 0 if outcome.standing.ticket.seated else 1
