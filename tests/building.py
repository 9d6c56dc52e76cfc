"""The domain as the tests build it: the collaborators ``webapp.services.build`` wires,
on a Redis client, key prefix and clock of the test's choosing (another process, a
cluster, a frozen clock)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
from altcha import Challenge, Payload, solve_challenge
from flask import Config

from webapp.config import Defaults
from webapp.domain.announcer import Announcer, Publisher
from webapp.domain.chat import Chats
from webapp.domain.lobby import Lobby
from webapp.domain.mail import MailHealth, MailSettings
from webapp.domain.reports import Reports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.visits import Visits
from webapp.domain.waitlist import Waitlists
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts
from webapp.workers.mailer import Mailer


def engine(
    client: Any, keys: Keys | None = None, clock: Callable[[], float] | None = None, **options: Any
) -> WaitingRooms:
    """An engine of its own, as one process has (``options``: batch, sweep_every...)."""
    return WaitingRooms(client, keys or Keys("wrtest"), Scripts(client), clock=clock, **options)


def engine_at(url: str) -> WaitingRooms:
    """An engine on a client of its own to the Redis at ``url``: what each process of a
    concurrency test builds."""
    return engine(redis.Redis.from_url(url, decode_responses=True))


def lobby_of(rooms: WaitingRooms, **options: Any) -> Lobby:
    """A process's lobby over ``rooms`` (``options``: its cache's refresh, monotonic, size)."""
    return Lobby(rooms, Reports(rooms, **options))


def visits_of(rooms: WaitingRooms, publisher: Publisher, **cache: Any) -> Visits:
    """Visits over ``rooms``, telling ``publisher``, with collaborators of its own
    (``cache``: their cache's refresh, monotonic, size)."""
    reports = Reports(rooms, **cache)
    chats = Chats(rooms.client, rooms.keys, rooms.scripts)
    announcer = Announcer(publisher)
    here = Lobby(rooms, reports)
    waitlists = Waitlists(rooms, secret=b"test secret")
    return Visits(rooms, reports, chats, announcer, here, waitlists)


def mail_settings(**changes: Any) -> MailSettings:
    """The mailer's settings from the app's defaults, with ``changes``."""
    table = Config(".")
    table.from_object(Defaults)
    table["SECRET_KEY"] = "mail-tests"
    return MailSettings.from_config(table, **changes)


def mailer_of(
    rooms: WaitingRooms,
    port: int,
    worker: str = "w1",
    clock: Callable[[], float] | None = None,
    **changes: Any,
) -> Mailer:
    """A mailer worker on ``rooms``'s Redis sending to the SMTP server on ``port``
    (``changes``: its settings, say secret, public_url, backoff)."""
    settings = mail_settings(**{"smtp_port": port, "public_url": "https://w.example", **changes})
    return Mailer(rooms, MailHealth(rooms.client, rooms.keys), settings, worker, clock)


def sign_up(
    waitlists: Waitlists, n: int, room: str = "list", confirm: bool = True, start: int = 0,
    **extra: Any,
) -> list[str]:  # fmt: skip
    """``n`` entries of a waitlist (P<start>.., p<start>@example.org..), confirmed unless
    told otherwise; their ids in order."""
    ids = []
    for i in range(start, start + n):
        entry = waitlists.join(room, f"P{i}", f"p{i}@example.org", **extra)
        if confirm:
            waitlists.confirm(room, entry.id)
        ids.append(entry.id)
    return ids


def solved(challenge: dict[str, Any]) -> str:
    """What a browser's solver sends back for an ALTCHA v2 ``challenge`` (as the API
    gives it), found by the ``altcha`` library's solver: the payload, base64 JSON."""
    made = Challenge.from_dict(challenge)
    found = solve_challenge(made, timeout=60)
    assert found is not None and found.counter <= challenge["maxnumber"]
    return Payload(made, found).to_base64()
