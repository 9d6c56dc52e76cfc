"""Redis outages cost nobody a place (issue 10): Redis stopped, restarted, frozen, and
someone leaving while it is down, under gunicorn with 2 gevent workers and people whose
pages stay open (seated members holding room sockets, visitors polling the line)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import redis
from faultkit import BEAT, CAPACITY, DROPOUT, GRACE, PREFIX, SWEEP, RedisServer
from visitors import Answer, OpenPage, Prober, RoomWatch, Sample

from webapp.domain.chat import room_chat_id
from webapp.redis.keys import Keys

pytestmark = [pytest.mark.faults, pytest.mark.slow]

AFTER = DROPOUT + 2 * BEAT  # watched after recovery: longer than any bound of the room
READY_WITHIN = 5.0  # /readyz says 503 this soon after Redis goes, and 200 after it is back
ANSWER_WITHIN = 2.0  # seconds for any HTTP answer while Redis is frozen
PROPER_CLOSES = (1011, 1013)  # a socket the server must close over a Redis error


class Findings:
    """Every broken promise of one scenario, with the figures, reported together."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.figures: list[str] = []

    def check(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)

    def figure(self, text: str) -> None:
        self.figures.append(text)

    def verdict(self, pages: list[OpenPage], t0: float) -> None:
        crashed = [p.name for p in pages if p.harness_error]
        errors = [p.harness_error for p in pages if p.harness_error]
        assert not crashed, f"harness error in {crashed}: {errors[0] if errors else ''}"
        story = [p.summary(t0) for p in pages]
        print("\n".join(["figures:", *self.figures]))  # shown for a pass with -rP
        assert not self.problems, "\n".join(
            ["", *self.problems, "figures:", *self.figures, "pages (s from t0):", *story]
        )


def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"harness: {what} not within {timeout}s")
        time.sleep(0.1)


def crowd(
    people: Callable[[str], OpenPage], seated: int, waiting: int
) -> tuple[list[OpenPage], list[OpenPage]]:
    """``seated`` members in the room with live sockets, then ``waiting`` in line."""
    members = [people(f"member{i}") for i in range(seated)]
    assert [p.mode for p in members] == ["room"] * seated, "setup: " + "; ".join(
        p.summary(p.events[0][0]) for p in members
    )
    until(lambda: all(p.live() for p in members), 15, "every member's socket live")
    waiters = [people(f"waiter{i}") for i in range(waiting)]
    lined = [(p.mode, p.position) for p in waiters]
    assert lined == [("waiting", i + 1) for i in range(waiting)], f"setup: the line is {lined}"
    return members, waiters


def watched(watch: RoomWatch, start: float, end: float) -> list[Sample]:
    """The samples of a span; a watcher that saw too little is a harness failure."""
    samples = watch.since(start, end)
    assert len(samples) >= (end - start) / watch.every / 3, (
        f"harness: only {len(samples)} samples of the room in {end - start:.1f}s"
    )
    return samples


def seats_lost(members: list[OpenPage], samples: list[Sample], t0: float) -> list[str]:
    """Members who lost their seat at some point of ``samples`` (or whose page ended)."""
    lost = []
    for page in members:
        gap = next((s for s in samples if page.first_token not in s.seats), None)
        if gap is not None or page.mode != "room":
            when = f"out of the seats at {gap.at - t0:+.1f}s" if gap else "still seated"
            lost.append(f"{page.name} ({when}, page {page.mode})")
    return lost


def places_lost(waiters: list[OpenPage], samples: list[Sample], t0: float) -> list[str]:
    """Waiters who left the line, or saw it reordered, in ``samples`` (or whose page ended)."""
    order = [p.first_token for p in waiters]
    lost = []
    for page in waiters:
        gap = next((s for s in samples if page.first_token not in s.line), None)
        if gap is not None or page.mode != "waiting":
            when = f"out of the line at {gap.at - t0:+.1f}s" if gap else "still in line"
            lost.append(f"{page.name} ({when}, page {page.mode})")
    for sample in samples:
        ours = [t for t in sample.line if t in order]
        if ours != [t for t in order if t in ours]:
            lost.append(f"the line's order changed at {sample.at - t0:+.1f}s")
            break
    return lost


def admission(findings: Findings, samples: list[Sample], t0: float) -> None:
    """Never more seats than the capacity; nobody seated twice or seated and waiting."""
    most = max((len(s.seats) for s in samples), default=0)
    findings.figure(f"most seats taken at once: {most} of {CAPACITY}")
    findings.check(most <= CAPACITY, f"over-admission: {most} seats taken of {CAPACITY}")
    for sample in samples:
        owners = Counter(sample.owners.values())
        twice = [who for who, n in owners.items() if n > 1]
        both = set(sample.seats) & set(sample.line)
        if twice or both:
            findings.check(
                False,
                f"at {sample.at - t0:+.1f}s seated twice: {twice}, "
                f"seated and waiting: {sorted(both)}",
            )
            break


def sockets_behaved(findings: Findings, members: list[OpenPage]) -> None:
    """Every socket still live, and any that closed did so properly, with a reason."""
    dead = [f"{p.name} ({p.mode})" for p in members if not p.live()]
    findings.check(not dead, f"pages without a live socket at the end: {dead}")
    closes = [(p.name, code, reason) for p in members for _, code, reason in p.closes]
    improper = [c for c in closes if c[1] not in PROPER_CLOSES or not c[2]]
    findings.figure(
        f"socket closes seen: {len(closes)}, reconnects: {sum(p.opens - 1 for p in members)}"
    )
    findings.check(
        not improper,
        f"{len(improper)} socket ends were not a close with 1011/1013 and a reason, e.g. "
        f"{improper[:3]}",
    )
    garbage = [(p.name, what) for p in members for _, what in p.protocol_errors]
    findings.check(not garbage, f"HTTP or other non-frames on the socket: {garbage[:3]}")


def readiness(findings: Findings, probe: Prober, down_at: float, back_at: float) -> None:
    """/readyz: 503 from 5 s into the outage until it ends, 200 within 5 s after it;
    /healthz: 200 throughout."""
    during = probe.to("/readyz", down_at + READY_WITHIN, back_at - 1)
    statuses = Counter(a.status for a in during)
    findings.figure(f"/readyz during the outage: {dict(statuses)}")
    findings.check(
        bool(during) and set(statuses) == {503},
        f"/readyz was not 503 all through the outage: {dict(statuses)}",
    )
    after = probe.to("/readyz", back_at)
    ready = next((a for a in after if a.status == 200), None)
    delay = None if ready is None else ready.sent + ready.elapsed - back_at
    findings.figure(
        f"/readyz 200 again after: {'never' if delay is None else f'{delay:.1f}s'}"
        f" (statuses after: {dict(Counter(a.status for a in after))})"
    )
    findings.check(delay is not None and delay <= READY_WITHIN, "/readyz not 200 within 5 s")
    late = [a for a in probe.to("/readyz", back_at + READY_WITHIN) if a.status != 200]
    findings.check(not late, f"/readyz not 200 from 5 s after recovery on: {late[:3]}")
    health = Counter(a.status for a in probe.to("/healthz"))
    findings.figure(f"/healthz throughout: {dict(health)}")
    findings.check(set(health) == {200}, f"/healthz not always 200: {dict(health)}")
    rooms = probe.to("/api/rooms", back_at)
    answering = next((a for a in rooms if a.status == 200), None)
    findings.figure(
        "/api/rooms 200 again after: "
        + ("never" if answering is None else f"{answering.sent + answering.elapsed - back_at:.1f}s")
    )


def chat_texts(port: int, room: str) -> tuple[list[str], int]:
    """The room chat's stored messages and how many members it has, read from Redis."""
    keys = Keys(PREFIX).chat(room_chat_id(room))
    client = redis.Redis(port=port, decode_responses=True, socket_timeout=2)
    try:
        stored = client.zrange(keys.messages, 0, -1)
        return [json.loads(m)["text"] for m in stored], client.zcard(keys.members)
    finally:
        client.close()


@pytest.mark.parametrize("outage", [20, 60])
def test_an_outage_costs_nobody_a_seat_a_place_or_the_chat(
    redis_server: RedisServer,
    people: Any,
    room: str,
    watch: RoomWatch,
    probe: Any,
    outage: int,
) -> None:
    """Redis down 20 s (then 60 s) and back from its AOF: every seat, place and chat
    message is kept, seats never exceed capacity, /readyz follows Redis."""
    members, waiters = crowd(people, CAPACITY, 5)
    before = ["hello before the outage", "second", "third"]
    for page, text in zip(members, before, strict=False):
        assert page.say(text)
        until(lambda text=text: all(text in p.texts() for p in members), 10, f"{text!r} shown")
    probing = probe(["/readyz", "/healthz", "/api/rooms"])
    time.sleep(2)
    with redis_server.down():
        time.sleep(outage)
    down_at, back_at = redis_server.stopped_at, redis_server.started_at
    time.sleep(AFTER)

    found = Findings()
    nobody_lost_out(found, watch, members, waiters, back_at, "recovery")
    stored, in_chat = chat_texts(redis_server.port, room)
    found.figure(f"chat after recovery: {len(stored)} messages stored, {in_chat} members")
    found.check(set(before) <= set(stored), f"chat messages lost: {set(before) - set(stored)}")
    found.check(in_chat == CAPACITY, f"chat members: {in_chat} of {CAPACITY}")
    admission(found, watch.since(0), back_at)
    readiness(found, probing, down_at, back_at)
    sockets_behaved(found, members)
    found.verdict(members + waiters, back_at)


def nobody_lost_out(
    found: Findings, watch: RoomWatch, members: list[Any], waiters: list[Any], at: float,
    event: str,
) -> None:  # fmt: skip
    """Every member kept the seat and every waiter the place, as watched for AFTER
    seconds from ``at`` (the end of the fault, called ``event``)."""
    samples = watched(watch, at, at + AFTER)
    seats = seats_lost(members, samples, at)
    places = places_lost(waiters, samples, at)
    found.figure(
        f"seats kept: {CAPACITY - len(seats)} of {CAPACITY}; "
        f"places kept: {len(waiters) - len(places)} of {len(waiters)}"
    )
    found.check(not seats, f"members who lost their seat after {event}: {seats}")
    found.check(not places, f"waiters who lost their place after {event}: {places}")


def test_a_restart_loses_no_acknowledged_message(
    redis_server: RedisServer, people: Any, watch: RoomWatch
) -> None:
    """Redis stopped and started again (1 s) while everyone chats: the sockets stay or
    come back by themselves, and every acknowledged message reaches everyone, once."""
    members, _ = crowd(people, CAPACITY, 0)
    said: list[str] = []
    stop = threading.Event()

    def chatter() -> None:  # each member says something once a second
        n = 0
        while not stop.wait(BEAT / CAPACITY):
            page = members[n % CAPACITY]
            text = f"{page.name}-{n}"
            if page.say(text):
                said.append(text)
            n += 1

    talk = threading.Thread(target=chatter, name="chatter")
    talk.start()
    try:
        time.sleep(3)
        redis_server.stop()
        time.sleep(1)
        redis_server.start()
        time.sleep(5)
    finally:
        stop.set()
        talk.join(5)
    back_at = redis_server.started_at
    acked = {text for p in members for text in p.acknowledged()}
    with_all = lambda: all(acked <= set(p.texts()) for p in members if p.live())  # noqa: E731
    deadline = time.monotonic() + 10
    while not with_all() and time.monotonic() < deadline:
        time.sleep(0.2)

    found = Findings()
    found.figure(f"messages sent: {len(said)}, acknowledged: {len(acked)}")
    for page in members:
        missing = sorted(acked - set(page.texts()))
        found.check(not missing, f"{page.name} never got {len(missing)}: {missing[:5]}")
        twice = page.shown_twice()
        found.check(not twice, f"{page.name} shows {len(twice)} twice: {twice[:5]}")
        found.check(not page.restarts, f"{page.name}'s chat started over")
    lost = seats_lost(members, watched(watch, back_at, time.monotonic()), back_at)
    found.check(not lost, f"members who lost their seat: {lost}")
    sockets_behaved(found, members)
    found.verdict(members, back_at)


def test_a_frozen_redis_gets_quick_answers_and_admits_nobody_twice(
    redis_server: RedisServer,
    people: Any,
    room: str,
    watch: RoomWatch,
    probe: Any,
) -> None:
    """Redis frozen (SIGSTOP) 10 s: every request is answered within 2 s (503 is fine);
    after SIGCONT seats never exceed capacity, nobody is seated twice, nobody loses out."""
    members, waiters = crowd(people, CAPACITY, 3)
    paths = ["/readyz", "/healthz", "/api/rooms", f"/api/rooms/{room}/qsize"]
    probing = probe(paths)
    time.sleep(2)
    with redis_server.frozen_while():
        time.sleep(10)
    frozen_at, thawed_at = redis_server.frozen_at, redis_server.thawed_at
    time.sleep(AFTER)

    found = Findings()
    asked: list[Answer] = [a for path in paths for a in probing.to(path, frozen_at, thawed_at)]
    asked += [a for p in waiters for a in p.polls if frozen_at <= a.sent <= thawed_at]
    # /healthz touches no Redis: its slowest answer is the machine's own delay (a core
    # busy with other work), which any answer may carry on top of the bound
    lag = max((a.elapsed for a in asked if a.path == "/healthz" and a.status), default=0.0)
    bound = ANSWER_WITHIN + lag
    slow = [a for a in asked if a.status == 0 or a.elapsed > bound]
    slowest = max((a.elapsed for a in asked), default=0.0)
    found.figure(
        f"requests sent while frozen: {len(asked)}, answered within {bound:.1f} s (2 s and "
        f"the machine's own {lag:.1f} s): {len(asked) - len(slow)}, slowest: {slowest:.1f}s"
    )
    for path in [*paths, f"/rooms/{room}/line"]:
        mine = [a for a in asked if a.path.split("?")[0] == path]
        found.figure(
            f"  {path}: {len(mine)} sent, statuses {dict(Counter(a.status for a in mine))}"
            f", slowest {max((a.elapsed for a in mine), default=0):.1f}s"
        )
    found.check(not slow, f"{len(slow)} of {len(asked)} not answered within {bound:.1f} s")
    wrong = [a for a in asked if a.status not in ((200,) if a.path == "/healthz" else (200, 503))]
    found.check(not wrong, f"answers neither 200 nor 503 (healthz: 200): {wrong[:3]}")
    ready = [a for a in probing.to("/readyz", frozen_at, thawed_at - ANSWER_WITHIN)]
    found.check(
        all(a.status == 503 for a in ready),
        f"/readyz while frozen: {dict(Counter(a.status for a in ready))}, not all 503",
    )
    admission(found, watch.since(0), thawed_at)
    nobody_lost_out(found, watch, members, waiters, thawed_at, "the thaw")
    found.verdict(members + waiters, thawed_at)


def test_who_left_during_an_outage_frees_the_seat_after_it(
    redis_server: RedisServer, people: Any, watch: RoomWatch
) -> None:
    """Members whose tabs close while Redis is down (early and late in the outage) free
    their seats within grace and a beat or two of recovery; the first two in line are let
    in, in order, and nobody else loses out."""
    members, waiters = crowd(people, CAPACITY, 3)
    leavers, stayers = members[-2:], members[:-2]
    heads, last = waiters[:2], waiters[2]
    with redis_server.down():
        time.sleep(2)
        leavers[0].close_tab()
        time.sleep(7)
        leavers[1].close_tab()
        time.sleep(6)
    back_at = redis_server.started_at
    bound = GRACE + 2 * BEAT + SWEEP  # each seat is free by then
    deadline = time.monotonic() + bound + 6
    while not all(p.live() for p in heads) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(max(back_at + AFTER - time.monotonic(), 0))

    found = Findings()
    samples = watched(watch, back_at, back_at + AFTER)
    frees = []
    for page in leavers:
        held = max((s.at - back_at for s in samples if page.first_token in s.seats), default=0)
        freed = next((s for s in samples if page.first_token not in s.seats), None)
        found.figure(
            f"{page.name}'s seat still held {held:.1f}s after recovery, "
            + ("never freed" if freed is None else f"free at {freed.at - back_at:.1f}s")
            + f" (bound {bound:.1f}s)"
        )
        found.check(
            freed is not None and held <= bound,
            f"{page.name}'s seat was not free within {bound:.1f}s of recovery",
        )
        frees.append(float("inf") if freed is None else freed.at)
    for page, free in zip(heads, sorted(frees), strict=True):
        seated = next((s for s in samples if page.first_token in s.seats), None)
        found.figure(
            f"{page.name} seated: "
            + ("never" if seated is None else f"{seated.at - back_at:.1f}s after recovery")
            + f"; its page: {page.mode}, live socket: {page.live()}"
        )
        found.check(
            seated is not None and seated.at <= free + 1,
            f"{page.name} was not given a freed seat in line order",
        )
        found.check(page.live(), f"{page.name} is not in the room with a live socket")
    lost = seats_lost(stayers, samples, back_at)
    behind = places_lost([last], samples, back_at)
    found.figure(
        f"other members' seats kept: {len(stayers) - len(lost)} of {len(stayers)}; "
        f"third in line kept the place: {not behind}"
    )
    found.check(not lost, f"members who lost their seat: {lost}")
    found.check(not behind, f"the third in line lost the place: {behind}")
    admission(found, watch.since(0), back_at)
    found.verdict(members + waiters, back_at)
