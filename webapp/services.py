"""The app's services, built once per process from its settings, with one ``start()``
and one ``stop()`` for every background loop. Views reach them through
``webapp.views.services()``; nothing else keeps a second copy."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from webapp.chat_relay import ChatRelay
from webapp.domain.chat import Chats
from webapp.domain.connections import ConnectionLimits
from webapp.domain.lobby import Lobby
from webapp.domain.moves import Moves
from webapp.domain.reports import Reports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.sweeper import Sweeper
from webapp.domain.visits import Visits
from webapp.domain.waitlist import Waitlists
from webapp.periodic import run_every
from webapp.realtime import Hub, RoomRelay, room_state
from webapp.redis.connection import connect
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts


@dataclass
class Services:
    client: Any
    keys: Keys
    scripts: Scripts
    rooms: WaitingRooms
    lobby: Lobby
    chats: Chats
    limits: ConnectionLimits
    hub: Hub
    relay: RoomRelay
    chat_relay: ChatRelay
    visits: Visits
    waitlists: Waitlists
    reports: Reports
    sweeper: Sweeper | None
    chat_upkeep: float
    moves: Moves
    _loops: list[threading.Event] = field(default_factory=list)

    def start(self) -> None:
        """Starts the background loops: the sweep, the chat upkeep, the heartbeat of
        this server's connection counts. The hub's listener starts with its first
        subscriber."""
        if self.sweeper is not None:
            self.sweeper.start()
        if self.chat_upkeep:
            self.chat_relay.start(self.chat_upkeep)
        limits = self.limits
        beat = run_every(limits.ttl / 3, lambda: limits.heartbeat(time.time()), "conn-heartbeat")
        self._loops.append(beat)

    def stop(self) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()
        self.chat_relay.stop()
        for loop in self._loops:
            loop.set()
        self.hub.close()


def build(settings: Mapping[str, Any]) -> Services:
    """Every service of one process, from the app's settings (not started)."""
    client = connect(
        settings["REDIS_URL"],
        socket_timeout=float(settings["REDIS_SOCKET_TIMEOUT"]),
        connect_timeout=float(settings["REDIS_CONNECT_TIMEOUT"]),
    )
    keys = Keys(settings["REDIS_PREFIX"])
    sweep_every = float(settings["SWEEP_INTERVAL"] or 0)
    # A coalesced check-in may wait for the batch in flight, then for its own
    bound = 2 * (float(settings["REDIS_SOCKET_TIMEOUT"]) + float(settings["REDIS_CONNECT_TIMEOUT"]))
    rooms = WaitingRooms(
        client, keys, clock=settings["CLOCK"], sweep_every=sweep_every, coalesce=bound + 1
    )
    chats = Chats(client, keys)
    hub = Hub(client, keys)
    relay = RoomRelay(hub, state=lambda room: room_state(rooms, room))
    lobby = Lobby(rooms, refresh=settings["STATS_REFRESH"])
    waitlists = Waitlists(rooms, secret=settings["SECRET_KEY"] or "")
    visits = Visits(rooms, chats, relay, lobby, waitlists)
    scripts = Scripts(client)
    secret = settings["SECRET_KEY"] or ""
    return Services(
        client=client,
        keys=keys,
        scripts=scripts,
        rooms=rooms,
        lobby=lobby,
        chats=chats,
        limits=ConnectionLimits(
            client,
            keys,
            server_id=f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}",
            ttl_seconds=float(settings["CONNECTION_TTL"]),
            max_per_user=int(settings["MAX_CONNECTIONS_PER_USER"]),
        ),
        hub=hub,
        relay=relay,
        chat_relay=ChatRelay(chats, hub, settings["CLOCK"] or time.time),
        visits=visits,
        waitlists=waitlists,
        reports=Reports(rooms),
        sweeper=Sweeper(rooms, sweep_every, visits=visits) if sweep_every else None,
        chat_upkeep=float(settings["CHAT_UPKEEP_SECONDS"] or 0),
        moves=Moves(client, keys, scripts, secret, clock=settings["CLOCK"] or time.time),
    )
