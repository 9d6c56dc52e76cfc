"""Concurrent calls about one key, coalesced into one call per batch.

Every waiting visitor polls, so at a rush a process has several check-ins of the same
room in flight at once, each paying a script call's fixed cost (the client's Python,
a round trip, the server's reading and writing) for a few microseconds of work in
Redis. ``Coalescer`` runs them as one: a call made while a call of its key is in flight
waits in the key's queue, and the queue goes as the next batch. Nothing waits on
purpose: a call made while nothing of its key is in flight is sent at once by its own
caller (no thread, no hand-over), so an idle process answers as fast as before, and a
busy one sends fewer, larger calls; the batch grows with the load (group commit).
Redis runs a script atomically, so a batch is the same as its calls one after another
(docs/performance.md).

When a batch's call returns, its sender hands the queue to the first caller in it, who
sends it as the next batch, and so on. A caller waits at most ``wait`` seconds for its
answer, then gets ``redis.exceptions.TimeoutError``, as from a Redis call that timed
out; a caller that stops waiting never strands the others (the lead passes on). A
batch that found Redis away (a connection refused, or no answer in the client's
timeout) fails the calls queued behind it with the same error: they came while it
waited, so sending them would only wait as long again (a frozen Redis would cost a
caller two timeouts, not one); the next call tries afresh.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout

AWAY = (RedisConnectionError, RedisTimeout, ConnectionError, TimeoutError)  # Redis away

K = TypeVar("K")
A = TypeVar("A")
R = TypeVar("R")
log = logging.getLogger(__name__)


class _Call(Generic[A, R]):
    __slots__ = ("arg", "batch", "done", "error", "result")

    def __init__(self, arg: A) -> None:
        self.arg = arg
        self.done: threading.Event | None = None  # made only for a call that waits
        self.batch: list[_Call[A, R]] | None = None  # handed to it: it sends this batch
        self.result: R | None = None
        self.error: BaseException | None = None


class Coalescer(Generic[K, A, R]):
    """``coalescer(key, arg)`` returns what ``send(key, [arg, ...])`` gave for ``arg``,
    or raises what it raised. ``send`` returns one result per argument, in order; a
    result that is an exception is raised to its caller alone."""

    def __init__(
        self,
        send: Callable[[K, Sequence[A]], Sequence[R | Exception]],
        most: int = 64,
        wait: float = 30.0,
        lanes: int = 1,
    ) -> None:
        self.send = send
        self.most = most  # calls per batch at most
        self.wait = wait
        # Batches of one key in flight at once, at most. One: measured on two cores
        # (docs/performance.md, third pass), one lane made larger batches than two, so
        # less CPU per call in the app and in Redis, and a lower tail at half load.
        self.lanes = lanes
        self._lock = threading.Lock()
        # key -> the calls queued behind the batches in flight (no entry: none in flight)
        self._queues: dict[K, list[_Call[A, R]]] = {}
        self._flying: dict[K, int] = {}  # key -> batches in flight

    def __call__(self, key: K, arg: A) -> R:
        call: _Call[A, R] = _Call(arg)
        with self._lock:
            flying = self._flying.get(key, 0)
            if flying < self.lanes:
                self._flying[key] = flying + 1
                call.batch = [call]
            else:
                call.done = threading.Event()
                self._queues.setdefault(key, []).append(call)
        if call.batch is None:
            self._wait(key, call)
        if call.batch is not None:
            self._lead(key, call.batch)
        if call.error is not None:
            raise call.error
        return call.result  # type: ignore[return-value]

    def _wait(self, key: K, call: _Call[A, R]) -> None:
        """Until the call is answered or handed a batch to send."""
        assert call.done is not None
        try:
            answered = call.done.wait(self.wait)
        except BaseException:  # killed while waiting: pass on a lead it was handed
            with self._lock:
                if call.batch is None:
                    self._forget(key, call)
                    raise
                rest = [other for other in call.batch if other is not call]
                call.batch = None
                woken = self._promote(key, rest)
            if woken is not None:
                woken.set()
            raise
        if answered:
            return
        with self._lock:
            if call.batch is not None:
                return  # handed the lead as it gave up: it sends after all
            self._forget(key, call)
        raise RedisTimeout(f"no answer from Redis in {self.wait:g} s")

    def _forget(self, key: K, call: _Call[A, R]) -> None:
        """Takes a call that stops waiting out of its queue (under the lock); one
        already in a batch in flight is answered there, unread."""
        queue = self._queues.get(key)
        if queue is not None and call in queue:
            queue.remove(call)

    def _lead(self, key: K, batch: list[_Call[A, R]]) -> None:
        """Sends a batch, answers its calls, and hands the queue on (or, Redis away,
        fails the queue with it)."""
        behind: list[_Call[A, R]] = []
        try:
            results = self.send(key, [call.arg for call in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"{len(results)} results for {len(batch)} calls")
            for call, result in zip(batch, results, strict=True):
                if isinstance(result, Exception):
                    call.error = result
                else:
                    call.result = result
        except Exception as error:  # every call of the batch gets it
            for call in batch:
                call.error = error
            if isinstance(error, AWAY):  # and every call that came while it waited
                with self._lock:
                    behind = self._queues.pop(key, [])
                for call in behind:
                    call.error = error
        finally:
            with self._lock:
                for call in batch:
                    call.batch = None
                woken = self._promote(key, [])
            if woken is not None:
                woken.set()
            for call in (*batch, *behind):
                if call.done is not None:
                    call.done.set()

    def _promote(self, key: K, batch: list[_Call[A, R]]) -> threading.Event | None:
        """Under the lock: ``batch`` (if empty, the queue's first calls) gets a sender,
        its first call, whose event the caller sets once out of the lock; with nothing
        to send the key rests (None)."""
        if not batch:
            queue = self._queues.get(key)
            if not queue:
                self._queues.pop(key, None)
                flying = self._flying[key] - 1  # this lane rests
                if flying:
                    self._flying[key] = flying
                else:
                    del self._flying[key]
                return None
            batch, self._queues[key] = queue[: self.most], queue[self.most :]
        first = batch[0]
        first.batch = batch
        return first.done


class WriteBehind(Generic[K, A]):
    """``behind(key, arg)`` returns at once; ``send(key, [arg, ...])`` gets it later,
    from a thread of its own (a greenlet under gevent), with every other argument of
    its key made meanwhile, at most ``most`` a call. For writes nobody waits for (a join's
    prediction, kept to score the estimates): the request that made one answers
    without a round trip for it, and a busy process sends one call per batch. The
    thread starts with the first write and then sleeps while there is nothing to send
    (a daemon: it holds no process up). Woken by a write, it lingers ``linger`` seconds
    before taking what is pending, so a busy process's writes go many to a call (at 500
    joins a second, 10 ms gather about 5) instead of one each as they trickle in. Lost on
    a crash or when ``send`` fails (said in the log): use it only for what may be lost."""

    def __init__(
        self, send: Callable[[K, Sequence[A]], object], most: int = 256, linger: float = 0.0
    ) -> None:
        self.send = send
        self.most = most
        self.linger = linger
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._pending: dict[K, list[A]] = {}
        self._sending = False  # a batch taken from _pending is being sent
        self._thread: threading.Thread | None = None

    def __call__(self, key: K, arg: A) -> None:
        with self._lock:
            self._pending.setdefault(key, []).append(arg)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="write-behind", daemon=True)
                self._thread.start()
            else:
                self._ready.notify_all()  # the sender, and any flush waiting on it

    def flush(self, timeout: float = 5.0) -> bool:
        """Waits until every write made before it is sent (or lost, said in the log);
        False if that takes longer than ``timeout`` seconds. For a clean stop, and for
        tests that read what was written."""
        with self._lock:
            return self._ready.wait_for(lambda: not self._pending and not self._sending, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending:
                    self._ready.wait()
            if self.linger:
                time.sleep(self.linger)  # others made meanwhile go in the same call
            with self._lock:
                pending, self._pending = self._pending, {}
                self._sending = True
            self._send(pending)
            with self._lock:
                self._sending = False
                self._ready.notify_all()

    def _send(self, pending: dict[K, list[A]]) -> None:
        for key, args in pending.items():
            for start in range(0, len(args), self.most):
                try:
                    self.send(key, args[start : start + self.most])
                except Exception as error:  # Redis away: these are lost, said once
                    log.warning("%d writes of %r lost: %s", len(args) - start, key, error)
                    break
