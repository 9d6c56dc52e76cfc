"""Coalesced check-ins against a real Redis: many threads of one process check in at
once, each gets its own ticket back, and they reach Redis in fewer script calls."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from building import engine

from webapp.domain.rooms import TicketGone, TicketNotFound

ROOM = "rush"
THREADS = 16
CALLS_EACH = 40


def script_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "eval"))


def test_concurrent_check_ins_each_get_their_own_answer(redis_url: str, r: redis.Redis) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True, max_connections=64)
    rooms = engine(client, coalesce=10.0)
    rooms.configure(ROOM, {"capacity": 2, "dropout_seconds": 3600, "session_seconds": 3600})
    tokens = [rooms.join(ROOM).token for _ in range(THREADS * 2)]
    seated, waiting = tokens[:2], tokens[2:]
    gone = rooms.join(ROOM).token
    rooms.leave(ROOM, gone)
    r.config_resetstat()

    def poll(n: int) -> list[tuple[str, str, int] | str]:
        out: list[tuple[str, str, int] | str] = []
        for k in range(CALLS_EACH):
            token = tokens[(n + k) % len(tokens)] if k % 10 else gone
            try:
                t = rooms.check_in(ROOM, token)
                out.append((token, t.token, t.position))
            except TicketGone:
                out.append(token)
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        answers = [a for part in pool.map(poll, range(THREADS)) for a in part]
    assert len(answers) == THREADS * CALLS_EACH
    for answer in answers:
        if isinstance(answer, str):
            assert answer == gone  # the ended ticket, and only it, was refused
            continue
        asked, got, position = answer
        assert got == asked  # never another caller's ticket
        expected = waiting.index(asked) + 1 if asked in waiting else 0
        assert position == expected, (asked in seated, position)
    calls = script_calls(r)
    assert calls < THREADS * CALLS_EACH, "no check-ins went together"
    with pytest.raises(TicketNotFound):
        rooms.check_in(ROOM, "no-such-ticket")
    client.close()


def test_concurrent_joins_each_get_their_own_place(redis_url: str, r: redis.Redis) -> None:
    """Joins go together too: every joiner gets a ticket of its own, the line numbers
    are 1..n once each, and an identity joining twice holds one place."""
    client = redis.Redis.from_url(redis_url, decode_responses=True, max_connections=64)
    rooms = engine(client, coalesce=10.0)
    rooms.configure(ROOM, {"capacity": 3, "dropout_seconds": 3600})
    r.config_resetstat()

    def join(n: int) -> list[tuple[str, str, int]]:
        out = []
        for k in range(CALLS_EACH):
            t = rooms.join(ROOM, identity=f"v{n}" if k == 0 else "", name=f"n{n}-{k}")
            out.append((t.token, t.state, t.position))
        again = rooms.join(ROOM, identity=f"v{n}")  # the same identity: its own ticket
        assert again.token == out[0][0]
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        tickets = [t for part in pool.map(join, range(THREADS)) for t in part]
    assert len({token for token, _, _ in tickets}) == THREADS * CALLS_EACH
    assert sum(state == "admitted" for _, state, _ in tickets) == 3
    positions = sorted(p for _, state, p in tickets if state == "waiting")
    assert positions == list(range(1, THREADS * CALLS_EACH - 3 + 1))
    assert script_calls(r) < THREADS * (CALLS_EACH + 1), "no joins went together"
    client.close()


def test_predictions_go_together_and_keep_the_first(redis_url: str, r: redis.Redis) -> None:
    """Predictions at join, several in one call: kept for waiting tickets only, the
    first one counts."""
    rooms = engine(redis.Redis.from_url(redis_url, decode_responses=True))
    rooms.configure(ROOM, {"capacity": 1})
    seated, one, two = (rooms.join(ROOM).token for _ in range(3))
    kept = rooms.predict_many(
        ROOM, [(one, "10.0,5.0,15.0"), (seated, "1.0,0.0,2.0"), (two, "20.0,10.0,30.0")]
    )
    assert kept == [1, 0, 1]
    assert rooms.predict_many(ROOM, [(one, "99.0,1.0,200.0")]) == [1]
    predictions = r.hgetall(rooms.room_keys(ROOM).predictions)
    assert predictions == {one: "10.0,5.0,15.0", two: "20.0,10.0,30.0"}
    assert 0 < r.ttl(rooms.room_keys(ROOM).predictions) <= 172800
