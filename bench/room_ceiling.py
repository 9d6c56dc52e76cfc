"""One room's ceiling on one Redis core, and rooms spread over a 3-primary cluster.

Check-ins (``room_checkin.lua``, with the keys and arguments ``WaitingRooms`` sends)
are pipelined in batches, so the Python clients are not what limits: Redis is. For
each run it prints the check-ins per second served and, from each redis-server's CPU
time (``INFO cpu``), the check-ins one Redis core serves per second: one room's
ceiling, since all of a room's keys are one slot and so one core. On the cluster it
prints how the rooms and their calls spread over the primaries; N rooms on K primaries
can take K times one core's figure when they spread evenly. On a 2-core machine the
three primaries and the clients share two cores, so the cluster's total req/s is not
three times the single server's here: the per-core figure and the spread are what
carry over to a machine with a core per primary. One room is run again with
``--per-call`` check-ins per script call, as the app's coalescer sends them under load
(webapp/redis/coalesce.py): the call's fixed cost is then shared.

    .venv/bin/python bench/room_ceiling.py [--seconds 5] [--rooms 30]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from servers import HOST, free_port, redis_answers, spawn, start_redis, stop, wait_until

from webapp.domain.rooms import WaitingRooms
from webapp.redis.connection import connect, redis_server_binary
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

LONG = {"capacity": 1, "dropout_seconds": 3600, "session_seconds": 86400}
BATCH = 100  # check-ins per pipeline round trip


def start_cluster(stack: contextlib.ExitStack, workdir: Path, nodes: int = 3) -> list[int]:
    """A Redis Cluster of ``nodes`` primaries on loopback; their ports."""
    binary = redis_server_binary()
    ports = []
    for n in range(nodes):
        while True:
            port = free_port()
            if port + 10000 < 65536:
                break
        log = workdir / f"node-{n}.log"
        argv = [
            binary, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
            "--dir", str(workdir), "--cluster-enabled", "yes",
            "--cluster-config-file", f"nodes-{port}.conf",
        ]  # fmt: skip
        proc = spawn(argv, log)
        stack.callback(stop, proc)
        wait_until(functools.partial(redis_answers, port), proc, log)
        ports.append(port)
    cli = str(Path(binary).with_name("redis-cli"))
    subprocess.run(
        [cli, "--cluster", "create", *(f"{HOST}:{p}" for p in ports),
         "--cluster-replicas", "0", "--cluster-yes"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    probe = redis.Redis(host=HOST, port=ports[0], decode_responses=True)
    for _ in range(400):
        if probe.cluster("info")["cluster_state"] == "ok":
            break
        time.sleep(0.025)
    probe.close()
    return ports


def fill(url: str, rooms: list[str], per_room: int) -> dict[str, list[str]]:
    client = connect(url)
    engine = WaitingRooms(client, Keys("bench"), Scripts(client))
    tokens = {}
    for room in rooms:
        engine.configure(room, LONG)
        engine.join(room)  # holds the one seat: the rest wait in line
        tokens[room] = [engine.join(room).token for _ in range(per_room)]
    return tokens


def drive(url: str, tokens: dict[str, list[str]], seconds: float, per_call: int, out: Any) -> None:
    """Pipelined check-ins over every room, in turn, for ``seconds``, ``per_call`` tokens
    per script call (as the app's coalescer sends them under load); puts the count. On
    a cluster, each room's calls go straight to the primary holding its slot (redis-py's
    cluster pipeline refuses scripts), each node with its own pipeline."""
    client = connect(url)
    engine = WaitingRooms(client, Keys("bench"), Scripts(client))
    checkin = engine.scripts["room_checkin"]
    by_node: dict[tuple[str, int], list[tuple[list[str], list[Any]]]] = {}
    for room, each in tokens.items():
        named = {**engine.keys.room(room).named(), **engine.keys.drop(room).named()}
        keys = checkin.ordered({**named, **engine.keys.waitlist(room).named()})
        if hasattr(client, "get_node_from_key"):
            node = client.get_node_from_key(keys[0])
            where = (node.host, int(node.port))
        else:
            kwargs = client.connection_pool.connection_kwargs
            where = (kwargs["host"], int(kwargs["port"]))
        calls = [
            (keys, ["", "", 200, *each[i : i + per_call]]) for i in range(0, len(each), per_call)
        ]
        by_node.setdefault(where, []).extend(calls)
    nodes = []
    for (host, port), node_calls in by_node.items():
        direct = redis.Redis(host=host, port=port)
        nodes.append((direct, direct.register_script(checkin.text), node_calls))
    done, i = 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pipes = []
        for direct, script, node_calls in nodes:
            pipe = direct.pipeline(transaction=False)
            for n in range(BATCH):
                keys, args = node_calls[(i + n) % len(node_calls)]
                script(keys=keys, args=args, client=pipe)
            pipes.append(pipe)
        for pipe in pipes:
            pipe.execute()
        i += BATCH
        done += BATCH * len(nodes) * per_call
    out.put(done)


def cpu(ports: list[int]) -> list[float]:
    seconds = []
    for port in ports:
        info = redis.Redis(host=HOST, port=port).info("cpu")
        seconds.append(float(info["used_cpu_user"]) + float(info["used_cpu_sys"]))
    return seconds


def calls_by_node(ports: list[int]) -> list[int]:
    counts = []
    for port in ports:
        stats = redis.Redis(host=HOST, port=port).info("commandstats")
        counts.append(int(stats.get("cmdstat_evalsha", {}).get("calls", 0)))
    return counts


def run(
    label: str,
    url: str,
    ports: list[int],
    rooms: list[str],
    args: argparse.Namespace,
    per_call: int = 1,
) -> None:
    tokens = fill(url, rooms, args.per_room)
    for port in ports:
        redis.Redis(host=HOST, port=port).config_resetstat()
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    before = cpu(ports)
    began = time.monotonic()
    workers = [
        context.Process(target=drive, args=(url, tokens, args.seconds, per_call, queue))
        for _ in range(args.clients)
    ]
    for w in workers:
        w.start()
    total = sum(queue.get(timeout=args.seconds + 60) for _ in workers)
    for w in workers:
        w.join(10)
    elapsed = time.monotonic() - began
    used = [b - a for a, b in zip(before, cpu(ports), strict=True)]
    calls = calls_by_node(ports)
    per_core = total / sum(used) if sum(used) else float("nan")
    del elapsed  # includes starting the client processes: the rate is over their window
    print(
        f"{label}: {len(rooms)} room(s), {total:,} check-ins in {args.seconds:g} s = "
        f"{total / args.seconds:,.0f}/s; Redis CPU {sum(used):.1f} s: "
        f"{per_core:,.0f} check-ins per Redis core-second ({1e6 / per_core:.0f} µs each)"
    )
    if len(ports) > 1:
        share = ", ".join(
            f"{c / max(sum(calls), 1):.0%} of calls, {u:.1f} s CPU"
            for c, u in zip(calls, used, strict=True)
        )
        print(f"  per primary: {share}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rooms", type=int, default=30, help="rooms spread over the cluster")
    parser.add_argument("--per-room", type=int, default=200, help="tickets waiting per room")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument(
        "--per-call", type=int, default=8, help="check-ins per script call, coalesced run"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="wr-bench-ceiling-"))
        stack.callback(shutil.rmtree, workdir, True)
        port, _ = start_redis(stack, workdir)
        single = f"redis://{HOST}:{port}/0"
        run("one server, one room", single, [port], ["ceiling"], args)
        run(
            f"one server, one room, {args.per_call} check-ins per call (coalesced)",
            single,
            [port],
            ["ceiling"],
            args,
            args.per_call,
        )
        rooms = [f"spread-{n}" for n in range(args.rooms)]
        run("one server, many rooms", single, [port], rooms, args)
        cluster_dir = workdir / "cluster"
        cluster_dir.mkdir()
        ports = start_cluster(stack, cluster_dir)
        url = f"redis+cluster://{HOST}:{ports[0]}"
        run("3-primary cluster, one room", url, ports, ["ceiling"], args)
        run("3-primary cluster, many rooms", url, ports, rooms, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
