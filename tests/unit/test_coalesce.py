"""The coalescer: concurrent calls of one key go as batches, each caller gets its own
answer, and nothing a caller does strands the others. Real threads; ``send`` is plain
Python here (the Redis side: tests/domain/test_check_in_batches.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout

from webapp.redis.coalesce import Coalescer, WriteBehind


class Gated:
    """A ``send`` that records its batches and, while ``gate`` is shut, blocks on key
    "a"."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[int]]] = []
        self.threads: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Semaphore(0)

    def __call__(self, key: str, args: Sequence[int]) -> list[int | Exception]:
        self.batches.append((key, list(args)))
        self.threads.append(threading.get_ident())
        if key == "a":
            self.entered.release()
            self.gate.wait(10)
        return [ValueError(f"odd {a}") if a % 2 else a * 10 for a in args]


def queued(coalescer: Coalescer, key: str, count: int) -> None:
    """Until ``count`` calls wait in ``key``'s queue."""
    deadline = time.monotonic() + 5
    while len(coalescer._queues.get(key, [])) < count:
        assert time.monotonic() < deadline, "the calls never queued"
        time.sleep(0.001)


def held_with_queue(pool: ThreadPoolExecutor, coalescer: Coalescer, send: Gated,
                    behind: range) -> list[Any]:  # fmt: skip
    """A call of "a" (0) held in ``send``, and calls ``behind`` queued behind it: their
    futures, the held one first."""
    send.gate.clear()
    first = pool.submit(coalescer, "a", 0)
    assert send.entered.acquire(timeout=5)
    later = [pool.submit(coalescer, "a", n) for n in behind]
    queued(coalescer, "a", len(behind))
    return [first, *later]


def test_an_idle_call_is_sent_at_once_by_its_caller() -> None:
    send = Gated()
    coalescer = Coalescer(send)
    assert coalescer("a", 2) == 20
    assert send.batches == [("a", [2])]
    assert send.threads == [threading.get_ident()]  # no other thread, no hand-over
    with pytest.raises(ValueError, match="odd 3"):
        coalescer("a", 3)


def test_calls_made_while_one_is_in_flight_go_as_the_next_batch() -> None:
    send = Gated()
    coalescer = Coalescer(send, lanes=1)
    send.gate.clear()
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(coalescer, "a", 0)
        assert send.entered.acquire(timeout=5)
        later = [pool.submit(coalescer, "a", n) for n in range(2, 12, 2)]
        other = pool.submit(coalescer, "b", 100)  # another key is not held up
        assert other.result(timeout=5) == 1000
        queued(coalescer, "a", 5)
        send.gate.set()
        assert first.result(timeout=5) == 0
        assert [f.result(timeout=5) for f in later] == [20, 40, 60, 80, 100]
    batches = [args for key, args in send.batches if key == "a"]
    assert batches == [[0], [2, 4, 6, 8, 10]]  # in the order they came
    assert coalescer._queues == {} and coalescer._flying == {}  # every key rests


def test_each_caller_gets_its_own_refusal_and_a_failed_batch_fails_only_its_calls() -> None:
    failing = threading.Event()

    def send(key: str, args: Sequence[int]) -> list[int | Exception]:
        if failing.is_set():
            raise ConnectionError("Redis went away")
        return [ValueError(str(a)) if a % 2 else a for a in args]

    coalescer = Coalescer(send)
    with ThreadPoolExecutor(8) as pool:
        results = [pool.submit(coalescer, "a", n) for n in range(40)]
        for n, future in enumerate(results):
            if n % 2:
                with pytest.raises(ValueError, match=f"^{n}$"):
                    future.result(timeout=5)
            else:
                assert future.result(timeout=5) == n
    failing.set()
    with pytest.raises(ConnectionError):
        coalescer("a", 2)
    failing.clear()
    assert coalescer("a", 4) == 4  # it goes on after a failure


@pytest.mark.parametrize("away", [RedisTimeout("frozen"), RedisConnectionError("refused")])
def test_a_batch_that_found_redis_away_fails_the_calls_queued_behind_it(away) -> None:
    """Calls made while a batch waited on a Redis that never answered get its error at
    once, unsent (sending them would wait as long again); the next call tries afresh."""
    send = Gated()
    coalescer = Coalescer(send, lanes=1)

    def away_then_fine(key: str, args: Sequence[int]) -> list[int | Exception]:
        send(key, args)
        if len(send.batches) == 1:
            raise away
        return [a * 10 for a in args]

    coalescer.send = away_then_fine
    with ThreadPoolExecutor(8) as pool:
        futures = held_with_queue(pool, coalescer, send, range(2, 8, 2))
        send.gate.set()
        for future in futures:
            with pytest.raises(type(away)):
                future.result(timeout=5)
    assert send.batches == [("a", [0])]  # the queue was never sent
    assert coalescer._queues == {} and coalescer._flying == {}
    assert coalescer("a", 4) == 40  # the next call tries afresh


def test_a_batch_holds_at_most_most_calls() -> None:
    send = Gated()
    coalescer = Coalescer(send, most=3, lanes=1)
    with ThreadPoolExecutor(10) as pool:
        futures = held_with_queue(pool, coalescer, send, range(2, 16, 2))
        send.gate.set()
        assert [f.result(timeout=5) for f in futures] == list(range(0, 160, 20))
    assert [len(args) for _, args in send.batches] == [1, 3, 3, 1]


def test_two_lanes_send_two_calls_at_once_before_any_waits() -> None:
    send = Gated()
    coalescer = Coalescer(send, lanes=2)
    send.gate.clear()
    with ThreadPoolExecutor(4) as pool:
        one, two = pool.submit(coalescer, "a", 2), pool.submit(coalescer, "a", 4)
        assert send.entered.acquire(timeout=5) and send.entered.acquire(timeout=5)
        three = pool.submit(coalescer, "a", 6)
        queued(coalescer, "a", 1)
        send.gate.set()
        assert (one.result(5), two.result(5), three.result(5)) == (20, 40, 60)


def test_a_caller_that_stops_waiting_gets_a_timeout_and_strands_nobody() -> None:
    send = Gated()
    coalescer = Coalescer(send, wait=0.2, lanes=1)
    send.gate.clear()
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(coalescer, "a", 0)
        assert send.entered.acquire(timeout=5)
        gives_up = pool.submit(coalescer, "a", 2)
        with pytest.raises(RedisTimeout):
            gives_up.result(timeout=5)
        assert coalescer._queues.get("a") == []  # it left the queue
        later = pool.submit(coalescer, "a", 4)
        queued(coalescer, "a", 1)
        send.gate.set()
        assert first.result(timeout=5) == 0
        assert later.result(timeout=5) == 40  # the queue still moved on
    assert [args for _, args in send.batches] == [[0], [4]]
    assert coalescer._queues == {} and coalescer._flying == {}


def test_writes_behind_return_at_once_and_all_arrive_batched_by_key() -> None:
    """A write behind never waits for its send; every argument is sent once, under its
    key, in order, the ones made while a send was in flight together."""
    sent: list[tuple[str, list[int]]] = []
    gate = threading.Event()

    def send(key: str, args: Sequence[int]) -> None:
        gate.wait(5)
        sent.append((key, list(args)))

    behind: WriteBehind[str, int] = WriteBehind(send, most=3)
    began = time.monotonic()
    for i in range(8):
        behind("a" if i % 2 else "b", i)
    assert time.monotonic() - began < 0.5  # the first send is blocked: nobody waited
    gate.set()
    deadline = time.monotonic() + 5
    while sum(len(args) for _, args in sent) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(i for _, args in sent for i in args) == list(range(8))
    assert all(len(args) <= 3 for _, args in sent)
    for key, parity in (("a", 1), ("b", 0)):
        mine = [i for k, args in sent if k == key for i in args]
        assert mine == [i for i in range(8) if i % 2 == parity]
    assert len(sent) < 8  # those made during the first send went together


def test_a_flush_waits_for_every_write_made_before_it() -> None:
    """``flush`` returns once what was written before it is sent (the batch in flight
    included), and says False when the send takes longer than its timeout."""
    sent: list[int] = []
    gate = threading.Event()

    def send(key: str, args: Sequence[int]) -> None:
        gate.wait(5)
        sent.extend(args)

    behind: WriteBehind[str, int] = WriteBehind(send)
    for i in range(5):
        behind("a", i)
    assert behind.flush(timeout=0.2) is False  # the send is held: not everything is there
    gate.set()
    assert behind.flush(timeout=5) is True
    assert sorted(sent) == list(range(5))
    assert behind.flush(timeout=0.1) is True  # nothing pending: at once


def test_a_lingering_write_behind_sends_what_trickles_in_together() -> None:
    """Writes made one by one within the linger go to Redis in one call, not one each."""
    sent: list[list[int]] = []
    behind: WriteBehind[str, int] = WriteBehind(
        lambda key, args: sent.append(list(args)), linger=0.2
    )
    for i in range(5):
        behind("a", i)
        time.sleep(0.01)  # each alone, as requests arrive
    assert behind.flush(timeout=5) is True
    assert sent == [[0, 1, 2, 3, 4]]
