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
# "ok" past a line of 3: too long, a 503; "busy": the puzzle on auto at a threshold of
# 1, asked once more than one joined in the last minute (by the join's own script call)
KINDS = ("ok", "bad email", "closed", "puzzle", "busy")


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
        challenge = {"puzzle": "on", "busy": "auto"}.get(kind, "off")
        visits.configure("hall", {"status": status, "challenge": challenge,
                                  "challenge_threshold": 1})  # fmt: skip
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
        if kind == "puzzle" or (kind == "busy" and counted > 1):
            assert isinstance(outcome, PuzzleRequired)
            continue
        assert kind in ("ok", "busy") and isinstance(outcome, Joined) and counted < LIMIT
        counted += 1
        waiting += 0 if outcome.standing.ticket.seated else 1


def commands_sent(r: Any, act: Any) -> list[str]:
    """The commands sent to Redis while ``act`` runs, by name (MONITOR; a script's own
    commands are left out: they run inside its one call)."""
    marker = "commands-sent-marker"
    with r.monitor() as monitor:
        act()
        r.echo(marker)
        sent = []
        while (command := monitor.next_command())["command"] != f"ECHO {marker}":
            # (a new connection's handshake is not the join's)
            if command["client_type"] != "lua" and not command["command"].startswith("HELLO"):
                sent.append(command["command"].split()[0].upper())
    return sent


def test_a_join_under_auto_is_one_round_trip_as_under_off(
    r, keys, clock, lobby, reports, visits, waitlists
):
    """Under auto, whether a join must bring a solved puzzle is asked by the join's own
    script call (after its limits, as everywhere): a join of a room whose puzzle is auto
    sends Redis exactly what a join of a room without a puzzle sends (issue 32: one
    round trip per join), limits counted in that same call. It failed before: the
    last minute's joins were read first (HMGET)."""
    decide = admission(r, keys, clock, lobby, reports, visits, waitlists)
    visits.configure("auto", {"capacity": 1, "challenge": "auto", "challenge_threshold": 50})
    visits.configure("off", {"capacity": 1, "challenge": "off"})

    def join(room: str, n: int) -> None:
        outcome = decide.join(JoinRequest(room, address="192.0.2.1", identity=f"{room}{n}"))
        assert isinstance(outcome, Joined)

    for room in ("auto", "off"):  # a seat, then a place in line: every script loaded
        join(room, 0)
        join(room, 1)
    sent = {room: commands_sent(r, lambda room=room: join(room, 2)) for room in ("auto", "off")}
    assert sent["auto"] == sent["off"], sent  # (the rest: the wait it is shown)
    assert "HMGET" not in sent["auto"]
