"""The domain's services on the session's Redis (flushed per test) and the test's
clock, wired as ``webapp.services.build`` wires them. A module whose cases run on
Redis Cluster too overrides ``client`` with ``db``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from building import engine
from recording import RecordingMailbox, RecordingPublisher, smtp_server

from webapp.domain.announcer import Announcer
from webapp.domain.chat import Chats
from webapp.domain.lobby import Lobby
from webapp.domain.reports import Reports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.visits import Visits
from webapp.domain.waitlist import Waitlists
from webapp.redis.keys import Keys


@pytest.fixture
def client(r: Any) -> Any:
    return r


@pytest.fixture
def rooms(client: Any, keys: Keys, clock: Any) -> WaitingRooms:
    return engine(client, keys, clock)


@pytest.fixture
def reports(rooms: WaitingRooms, clock: Any) -> Reports:
    """Statistics read afresh on every call, on the test's clock."""
    return Reports(rooms, refresh=0.0, monotonic=clock)


@pytest.fixture
def told() -> RecordingPublisher:
    """What the room's sockets were told."""
    return RecordingPublisher()


@pytest.fixture
def announcer(told: RecordingPublisher) -> Announcer:
    return Announcer(told)


@pytest.fixture
def lobby(rooms: WaitingRooms, reports: Reports, announcer: Announcer) -> Lobby:
    return Lobby(rooms, reports)


@pytest.fixture
def waitlists(rooms: WaitingRooms) -> Waitlists:
    return Waitlists(rooms, secret=b"test secret")


@pytest.fixture
def chats(client: Any, keys: Keys, rooms: WaitingRooms) -> Chats:
    return Chats(client, keys, rooms.scripts)


@pytest.fixture
def visits(
    rooms: WaitingRooms,
    reports: Reports,
    chats: Chats,
    announcer: Announcer,
    lobby: Lobby,
    waitlists: Waitlists,
) -> Visits:
    return Visits(rooms, reports, chats, announcer, lobby, waitlists)


@pytest.fixture
def smtp() -> Iterator[tuple[RecordingMailbox, int]]:
    """A recording SMTP server on loopback: its mailbox and port."""
    with smtp_server() as started:
        yield started
