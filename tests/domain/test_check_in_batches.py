"""Coalesced check-ins against a real Redis: many threads of one process check in at
once, each gets its own ticket back, and they reach Redis in fewer script calls."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from webapp.domain.rooms import TicketGone, TicketNotFound, WaitingRooms
from webapp.redis.keys import Keys

ROOM = "rush"
THREADS = 16
CALLS_EACH = 40


def script_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "eval"))


def test_concurrent_check_ins_each_get_their_own_answer(redis_url: str, r: redis.Redis) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True, max_connections=64)
    rooms = WaitingRooms(client, Keys("wrtest"), coalesce=10.0)
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
