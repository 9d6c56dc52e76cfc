"""What a scheduled drop's start costs Redis: one ``drop_start.lua`` ranks the whole
pre-queue by the draw (pure-Lua HMAC-SHA256, webapp/lua/sha256_lib.lua) and puts it at
the head of the line, blocking Redis while it runs. Starts a throwaway redis-server,
pre-queues N people for each size, holds the start, and reads the script's own time
from Redis's slow log (the network and the client not included). Prints the median of
the rounds per size and the time per pre-queued person; a join to the pre-queue is
timed the same way, against a join to a room without a schedule.

    .venv/bin/python bench/drop_start.py [--sizes 500,5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from servers import start_redis  # noqa: E402

from webapp.domain.drops import Drops  # noqa: E402
from webapp.domain.rooms import WaitingRooms  # noqa: E402
from webapp.redis.keys import Keys  # noqa: E402
from webapp.redis.scripts import Scripts  # noqa: E402


def script_times(client: redis.Redis, name: bytes = b"EVALSHA") -> list[float]:
    """Microseconds of every script call in the slow log, oldest first, then clears it."""
    entries = client.slowlog_get(100_000)
    client.slowlog_reset()
    return [e["duration"] for e in reversed(entries) if e["command"].split()[0] == name]


def one_round(client: redis.Redis, size: int, n: int) -> tuple[float, float, float]:
    """(the start's ms, a pre-queue join's µs, a plain join's µs) for ``size`` people."""
    rooms = WaitingRooms(client, Keys(f"bench{n}"), Scripts(client))
    now = time.time()
    room, plain = f"drop{size}", f"plain{size}"
    rooms.configure(room, {"capacity": 20, "dropout_seconds": 3600,
                           "prequeue_at": int(now) - 1, "starts_at": int(now) + 3600})  # fmt: skip
    rooms.configure(plain, {"capacity": 1, "dropout_seconds": 3600})
    Drops(rooms).tick(room)  # the seed committed, as Visits.configure does
    client.slowlog_reset()
    for i in range(size):
        rooms.join(room, identity=f"p{i}")
    prequeue_joins = script_times(client)
    for i in range(min(size, 2000)):
        rooms.join(plain, identity=f"p{i}")
    plain_joins = script_times(client)
    rooms.client.hset(rooms.keys.room(room).settings, "starts_at", int(time.time()))
    Drops(rooms).start(room)
    start = script_times(client)
    return max(start) / 1000, statistics.median(prequeue_joins), statistics.median(plain_joins)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,5000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as work:
        port, _ = start_redis(stack, Path(work))
        client = redis.Redis(port=port)
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 100_000)
        print("pre-queued  start (ms, median)  per person (µs)  pre-queue join (µs)  "
              "plain join (µs)")  # fmt: skip
        for size in sizes:
            rounds = [one_round(client, size, n) for n in range(args.rounds)]
            start = statistics.median(r[0] for r in rounds)
            pq = statistics.median(r[1] for r in rounds)
            plain = statistics.median(r[2] for r in rounds)
            print(f"{size:>10,}  {start:>18.1f}  {start * 1000 / size:>15.0f}  {pq:>19.0f}  "
                  f"{plain:>15.0f}")  # fmt: skip
            client.flushall()
    return 0


if __name__ == "__main__":
    sys.exit(main())
