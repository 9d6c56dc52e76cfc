"""What each queueing_method (issue 30) costs Redis: a throwaway redis-server, a room of
N waiting (joined through the join script, 500 a call) whose capacity grows by 200 at
once, so one script fills 200 seats: from the head (fifo), or by 200 draws (random:
each a SHA-256 in Lua and a ZRANGE by index). Then passthrough on the same line: the
switch, and the sweep's calls until nobody waits. Read from Redis' slow log (threshold
0): the longest script call, and client-side the wall time.

    .venv/bin/python bench/queueing_methods.py [--people 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from servers import start_redis  # noqa: E402

from webapp.domain.draw import SeatDraw  # noqa: E402
from webapp.domain.join_limits import NO_LIMITS  # noqa: E402
from webapp.domain.reports import Reports  # noqa: E402
from webapp.domain.rooms import WaitingRooms  # noqa: E402
from webapp.domain.tickets import Joiner, new_ticket  # noqa: E402
from webapp.redis.keys import Keys  # noqa: E402
from webapp.redis.scripts import Scripts  # noqa: E402

FILL = 200  # seats freed at once (the upkeep's batch)
CHUNK = 500  # joiners per join script call


def line_of(rooms: WaitingRooms, room: str, people: int, method: str) -> None:
    rooms.configure(room, {"capacity": 1, "queueing_method": method, "dropout_seconds": 3600})
    rooms.join(room, identity="holder")
    for start in range(0, people, CHUNK):
        joiners: list[Joiner] = []
        for i in range(start, min(start + CHUNK, people)):
            token, code = new_ticket()
            joiners.append((token, f"p{i}", "", "", "", "", "", code, "", NO_LIMITS))
        for outcome in rooms.join_many(room, joiners):
            if isinstance(outcome, Exception):  # a refused join would shorten the line
                raise outcome


def longest_ms(client: redis.Redis) -> float:
    log = client.slowlog_get(1_000_000)
    calls = [e["duration"] / 1000 for e in log if "EVALSHA" in str(e.get("command") or "")]
    return max(calls, default=0.0)


def measured(client: redis.Redis, call: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, longest script ms) of ``call()``."""
    client.slowlog_reset()
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000, longest_ms(client)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--people", type=int, default=20_000)
    people = parser.parse_args().people
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        port, _ = start_redis(stack, workdir)
        client = redis.Redis(port=port, decode_responses=True)
        rooms = WaitingRooms(client, Keys("bench"), Scripts(client))
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 1_000_000)
        print(f"{people:,} waiting; {FILL} seats freed at once (one configure call)")
        for method in ("fifo", "random"):
            room = f"room-{method}"
            line_of(rooms, room, people, method)
            wall, longest = measured(
                client, functools.partial(rooms.configure, room, {"capacity": 1 + FILL})
            )
            seats = client.zcard(rooms.keys.room(room).seats)
            draws = [SeatDraw.parse(a.detail) for a in Reports(rooms).audit(room, count=FILL)]
            checked = sum(1 for d in draws if d is not None and d.verify())
            print(
                f"  {method:7} {seats - 1:4} seated: call {longest:6.2f} ms (wall {wall:6.1f} ms)"
                + (f", {checked} draws verified" if method == "random" else "")
            )
        room = "room-fifo"
        client.slowlog_reset()
        began = time.perf_counter()
        rooms.configure(room, {"queueing_method": "passthrough"})
        calls = 1
        while client.zcard(rooms.keys.room(room).line) > 0:
            rooms.sweep(room, rounds=1)
            calls += 1
        wall = (time.perf_counter() - began) * 1000
        seats = client.zcard(rooms.keys.room(room).seats)
        print(
            f"  passthrough: {seats:,} seated in {calls} calls, {wall:,.0f} ms in all; "
            f"longest call {longest_ms(client):.2f} ms"
        )


if __name__ == "__main__":
    main()
