"""A waitlist of a million: how fast a position read answers and a batch of 1,000 is
admitted, on a private redis-server.

Builds a priority-ordered waitlist room of ``--entries`` entries (1,000,000): the
first ``--scripted`` (20,000) sign up through the real scripts (waitlist_join.lua,
waitlist_confirm.lua, pipelined), which also measures their rate; the rest are
bulk-loaded, pipelined, as records of the same form (checked against the scripted
ones) with scores from ``priority_score``, since a million script calls would take
minutes on a small machine. A tenth carry referral points and nine in ten are
confirmed, so points move people and admission skips the unconfirmed. Then it times
``--reads`` position reads (one script call each, as a page makes), admissions of
1,000 (room_admit.lua), the sweep's fullest turn (100 lapses with their
replacements and 500 "nearly in" notices), and with ``--draw`` the switch to lottery
and a full draw of everyone left. Prints figures; asserts nothing about speed.

    .venv/bin/python bench/waitlist_scale.py                # about a minute
    .venv/bin/python bench/waitlist_scale.py --entries 100000 --draw
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, cast

import redis
from redis.typing import FieldT

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from servers import run_bounded, start_redis

from webapp.domain.draw import commitment_of, priority_score, verify_draw
from webapp.domain.rooms import WaitingRooms
from webapp.domain.waitlist import DrawRecord, Waitlists
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

ROOM = "big"
PIPE = 2000  # script calls per pipeline round trip
BULK = 10_000  # records per bulk command
NOW = 1_700_000_000.0
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


def address_of(i: int) -> str:
    """About 20 entries per address and 2,000 per /24: some sharing, as behind NATs."""
    return f"10.{(i // 50_000) % 250}.{(i // 2000) % 25}.{(i // 20) % 100 + 1}"


def members(client: redis.Redis, key: str, start: int = 0, end: int = -1) -> list[str]:
    """ZRANGE's members: the bench's client decodes replies, which redis-py's types do
    not know."""
    return cast(list[str], client.zrange(key, start, end))


def scripted(client: redis.Redis, waitlists: Waitlists, count: int, rng: random.Random) -> None:
    """``count`` sign-ups through the real scripts, pipelined; prints their rate."""
    keys = {**waitlists.keys.room(ROOM).named(), **waitlists.keys.waitlist(ROOM).named()}
    join, confirm = waitlists.scripts["waitlist_join"], waitlists.scripts["waitlist_confirm"]
    hashes = cache(waitlists._address_hashes)
    codes: list[str] = []
    started = time.perf_counter()
    calls = 0
    for first in range(0, count, PIPE):
        pipe = client.pipeline(transaction=False)
        batch = []
        for i in range(first, min(first + PIPE, count)):
            entry = f"e{i:07d}{rng.getrandbits(40):010x}"
            referral = codes[rng.randrange(len(codes))] if codes and rng.random() < 0.1 else ""
            ip, network = hashes(address_of(i))
            email = f"person{i}@example.org"
            args = [NOW, "", 200, entry, f"P{i}", email, email, referral, ip, network, ""]
            join(keys=keys, args=args, client=pipe)
            batch.append(entry)
        codes += [str(reply[13]) for reply in pipe.execute()]
        pipe = client.pipeline(transaction=False)
        for entry in batch:
            if rng.random() < 0.9:
                confirm(keys=keys, args=[NOW, "", 200, entry], client=pipe)
        calls += len(batch) + len(pipe)
        pipe.execute()
    took = time.perf_counter() - started
    print(f"  {count:,} through the scripts in {took:.1f} s ({calls / took:,.0f} script calls/s)")


def code_of(i: int) -> str:
    """A referral code for a bulk-loaded entry: 8 Crockford characters, starting Z (the
    scripts' codes are random, so a clash is as unlikely as between two of theirs)."""
    out = "Z"
    for _ in range(7):
        out += CROCKFORD[i % 32]
        i //= 32
    return out


def bulk(
    client: redis.Redis, waitlists: Waitlists, first: int, count: int, rng: random.Random
) -> None:
    """Entries ``first`` .. ``first + count - 1`` written directly, in the scripts' form."""
    wl = waitlists.keys.waitlist(ROOM)
    sample = json.loads(client.hget(wl.entries, members(client, wl.line, 0, 0)[0]) or "{}")
    hashes = cache(waitlists._address_hashes)
    seq = int(client.get(wl.seq) or 0)
    addresses: dict[FieldT, int] = {}
    started = time.perf_counter()
    for start in range(first, first + count, BULK):
        entries: dict[FieldT, str] = {}
        emails: dict[FieldT, str] = {}
        codes: dict[FieldT, str] = {}
        line: dict[str, float] = {}
        ready: dict[str, float] = {}
        for i in range(start, min(start + BULK, first + count)):
            seq += 1
            entry = f"e{i:07d}{rng.getrandbits(40):010x}"
            ip, network = hashes(address_of(i))
            addresses[ip] = addresses.get(ip, 0) + 1
            credited = rng.randint(1, 5) if rng.random() < 0.1 else 0
            confirmed = rng.random() < 0.9
            email = f"person{i}@example.org"
            record: dict[str, Any] = {
                "n": f"P{i}", "em": email, "ek": email, "rc": code_of(i), "ok": confirmed,
                "p": 100 * credited, "seq": seq, "j": NOW, "st": "waiting",
                "rf": {"c": credited, "h": 0, "p": 0}, "ip": ip, "ac": addresses[ip],
                "net": network,
            }  # fmt: skip
            entries[entry] = json.dumps(record, separators=(",", ":"))
            emails[email], codes[record["rc"]] = entry, entry
            line[entry] = priority_score(record["p"], seq)
            if confirmed:
                ready[entry] = line[entry]
        pipe = client.pipeline(transaction=False)
        pipe.hset(wl.entries, mapping=entries)
        pipe.hset(wl.emails, mapping=emails)
        pipe.hset(wl.codes, mapping=codes)
        pipe.zadd(wl.line, line)
        if ready:
            pipe.zadd(wl.ready, ready)
        pipe.execute()
        done = min(start + BULK, first + count) - first
        if done % 200_000 == 0 or done == count:
            print(f"  {first + done:>9,} entries ({time.perf_counter() - started:.1f} s bulk)")
    client.hset(wl.addresses, mapping=addresses)
    client.set(wl.seq, seq)
    missing = set(sample) - set(record) - {"by", "rs", "vt", "rw", "rp", "dev", "a"}
    if missing:
        raise RuntimeError(f"bulk records lack fields the scripts write: {sorted(missing)}")


def server_us(client: redis.Redis) -> float:
    """Redis's own time per script call since the last CONFIG RESETSTAT, in µs: what a
    busy machine's scheduling adds to the client's timings is not in it."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec_per_call", 0.0))


def time_reads(waitlists: Waitlists, ids: list[str], reads: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    times = []
    waitlists.client.config_resetstat()
    for _ in range(reads):
        entry = ids[rng.randrange(len(ids))]
        t0 = time.perf_counter()
        waitlists.position(ROOM, entry)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def report_reads(label: str, times: list[float], client: redis.Redis) -> None:
    print(
        f"{label}: p50 {statistics.median(times):.3f} ms  p99 {percentile(times, 0.99):.3f} ms"
        f"  max {max(times):.3f} ms  ({len(times):,} reads, one script call each;"
        f" {server_us(client):.0f} µs of it in Redis)"
    )


def admit_1000(rooms: WaitingRooms, client: redis.Redis, request: str, label: str) -> None:
    client.config_resetstat()
    t0 = time.perf_counter()
    admitted = rooms.admit(ROOM, 1000, request_id=request, who="bench")
    took = (time.perf_counter() - t0) * 1000
    print(
        f"{label}: {took:.1f} ms ({len(admitted.tokens):,} admitted, one script;"
        f" {server_us(client) / 1000:.1f} ms of it in Redis)"
    )


def sweep_turn(rooms: WaitingRooms, waitlists: Waitlists, client: redis.Redis) -> None:
    """Times the sweep's fullest turn: 100 lapses due (their deadlines moved into the
    past), each with its replacement admitted, and 500 'nearly in' notices."""
    wl = waitlists.keys.waitlist(ROOM)
    rooms.configure(ROOM, {"notify_near": 500})
    due = members(client, wl.unclaimed, 0, 99)
    client.zadd(wl.unclaimed, dict.fromkeys(due, 1))
    t0 = time.perf_counter()
    turn = waitlists.sweep_turn(ROOM)
    took = (time.perf_counter() - t0) * 1000
    print(f"sweep turn: {took:.1f} ms ({turn.lapsed} lapsed, {turn.admitted} admitted in "
          f"their place, {turn.near} told they are nearly in; one script)")  # fmt: skip
    rooms.configure(ROOM, {"notify_near": None})


def verify_lottery(waitlists: Waitlists, client: redis.Redis, record: DrawRecord) -> None:
    """Checks the draw as anyone could: the revealed seed hashes to the commitment
    published before, and the order recomputed from it and the published participants
    (``verify_draw``) is the line's order."""
    t0 = time.perf_counter()
    published = waitlists.draw_entries(ROOM, 0, record.entries)
    order = verify_draw(record.seed, published)
    line = client.zrange(waitlists.keys.waitlist(ROOM).line, 0, len(order) - 1)
    honest = commitment_of(record.seed) == record.commitment
    took = time.perf_counter() - t0
    print(f"lottery verified from its seed: commitment {'matches' if honest else 'DIFFERS'}, "
          f"recomputed order {'equals' if line == order else 'DIFFERS FROM'} the line's "
          f"({len(order):,} entries, {took:.1f} s)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--scripted", type=int, default=20_000, help="of them, via scripts")
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--batches", type=int, default=3, help="admissions of 1,000 timed")
    parser.add_argument("--draw", action="store_true", help="then switch to lottery and draw")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=900, help="seconds before giving up")
    options = parser.parse_args()

    def work(stack: contextlib.ExitStack) -> None:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wl-bench-")))
        port, _pid = start_redis(stack, workdir)
        client = redis.Redis(port=port, decode_responses=True)
        stack.callback(client.close)
        rooms = WaitingRooms(client, Keys("bench"), Scripts(client))
        waitlists = Waitlists(rooms, secret=b"bench")
        rooms.configure(ROOM, {"kind": "waitlist", "ordering": "priority"})
        print(f"building a priority waitlist of {options.entries:,}")
        rng = random.Random(options.seed)
        t0 = time.perf_counter()
        first = min(options.scripted, options.entries)
        scripted(client, waitlists, first, rng)
        bulk(client, waitlists, first, options.entries - first, rng)
        built = time.perf_counter() - t0
        ids = members(client, waitlists.keys.waitlist(ROOM).line)
        memory = client.info("memory")["used_memory"] / 2**20
        wl = waitlists.keys.waitlist(ROOM)
        print(
            f"built in {built:.1f} s: {client.zcard(wl.line):,} waiting, "
            f"{client.zcard(wl.ready):,} confirmed; Redis uses {memory:,.0f} MiB"
        )
        reads = time_reads(waitlists, ids, options.reads, options.seed)
        report_reads("position reads", reads, client)
        for i in range(options.batches):
            admit_1000(rooms, client, f"bench-{i}", "admit 1,000")
        kinds = Counter(fields["kind"] for _, fields in client.xrange(wl.outbox) or [] if fields)
        print(f"outbox: {sum(kinds.values()):,} messages ({dict(sorted(kinds.items()))}: "
              "one per admission, one per scripted join)")  # fmt: skip
        sweep_turn(rooms, waitlists, client)
        reads = time_reads(waitlists, ids, options.reads, options.seed + 1)
        report_reads("position reads after", reads, client)
        if options.draw:
            t0 = time.perf_counter()
            rooms.configure(ROOM, {"ordering": "lottery"})
            record = waitlists.draw(ROOM, who="bench")
            took = time.perf_counter() - t0
            print(f"lottery draw of {record.entries:,} entries: {took:.1f} s ({record.state})")
            verify_lottery(waitlists, client, record)
            admit_1000(rooms, client, "bench-drawn", "admit 1,000 after the draw")

    return run_bounded(options.budget, work)


if __name__ == "__main__":
    sys.exit(main())
