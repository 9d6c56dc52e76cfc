"""Admins admitting at once from several real processes (the idempotent batch
admission's race): each process its own client and engine, as app workers have."""

from __future__ import annotations

import multiprocessing
from typing import Any

from webapp.domain.tickets import Admission


def _admit(url: str, prefix: str, room: str, count: int, override: bool, now: float | None,
           results: Any, request_id: str) -> None:  # fmt: skip
    import redis
    from building import engine

    from webapp.redis.keys import Keys

    client = redis.Redis.from_url(url, decode_responses=True)
    rooms = engine(client, Keys(prefix), None if now is None else (lambda: now))
    results.put(rooms.admit(room, count, request_id=request_id, override=override, who=request_id))


def admit_at_once(
    url: str, prefix: str, room: str, count: int, processes: int = 2,
    override: bool = False, now: float | None = None,
) -> list[Admission]:  # fmt: skip
    """Each of ``processes`` admits the next ``count`` of ``room`` with its own request
    id ("admin-<i>", also its name in the audit log); what each admitted."""
    results: Any = multiprocessing.Queue()
    procs = [
        multiprocessing.Process(
            target=_admit, args=(url, prefix, room, count, override, now, results, f"admin-{i}")
        )
        for i in range(processes)
    ]
    for proc in procs:
        proc.start()
    admitted = [results.get(timeout=30) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    return admitted
