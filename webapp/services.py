"""The composition root: every service of a process, built once from its settings by
``build``, with one ``start()`` and one ``stop()`` for every background loop. The web
app (``create_app``) and the mailer (``python -m webapp.workers.mailer``) both build theirs
here, from settings read and resolved alike (``webapp.config``). Views reach the
services through ``webapp.views.services()``; nothing else keeps a second copy."""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webapp.domain.admins import Admins
from webapp.domain.admission import Admission, JoinPolicy
from webapp.domain.announcer import Announcer
from webapp.domain.challenge import Challenges
from webapp.domain.chat import Chats
from webapp.domain.claims import Claims, LiveClaims
from webapp.domain.clock import Clock
from webapp.domain.connections import ConnectionLimits
from webapp.domain.identity import Identities
from webapp.domain.join_limits import JoinLimits
from webapp.domain.join_refusals import JoinRefusals
from webapp.domain.lobby import Lobby
from webapp.domain.mail import MailHealth
from webapp.domain.moves import Moves
from webapp.domain.passes import Passes, PassKeys
from webapp.domain.reports import Reports
from webapp.domain.room_report import RoomReports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.seat_passes import Revocations, SeatPasses
from webapp.domain.site_keys import SiteKeys
from webapp.domain.sweeper import Sweeper
from webapp.domain.visits import Visits
from webapp.domain.waitlist import Waitlists
from webapp.domain.webhooks import Webhooks
from webapp.infra.periodic import off_the_loop, run_every
from webapp.live.chat_relay import ChatRelay
from webapp.live.realtime import Hub, RoomRelay, room_state
from webapp.redis.connection import connect
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

if TYPE_CHECKING:
    from webapp.web.metrics import Metrics


@dataclass
class Services:
    client: Any
    keys: Keys
    scripts: Scripts
    clock: Clock
    rooms: WaitingRooms
    reports: Reports
    lobby: Lobby
    chats: Chats
    socket_limits: ConnectionLimits
    hub: Hub
    relay: RoomRelay
    chat_relay: ChatRelay
    visits: Visits
    waitlists: Waitlists
    sweeper: Sweeper | None
    chat_upkeep: float
    moves: Moves
    claims: Claims
    live_claims: LiveClaims
    admins: Admins
    mail: MailHealth
    metrics: Metrics
    challenges: Challenges
    passes: Passes
    seat_passes: SeatPasses
    revocations: Revocations
    site_keys: SiteKeys
    join_limits: JoinLimits
    admission: Admission
    webhooks: Webhooks
    room_reports: RoomReports
    _loops: list[threading.Event] = field(default_factory=list)

    def start(self) -> None:
        """Starts the background loops: the sweep, the chat upkeep, the heartbeat of
        this server's connection counts. The hub's listener starts with its first
        subscriber."""
        if self.sweeper is not None:
            self.sweeper.start()
        if self.chat_upkeep:
            self.chat_relay.start(self.chat_upkeep)
        self.revocations.start()
        socket_limits, clock = self.socket_limits, self.clock
        beat = run_every(
            socket_limits.ttl / 3, lambda: socket_limits.heartbeat(clock()), "conn-heartbeat"
        )
        self._loops.append(beat)

    def stop(self) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()
        self.chat_relay.stop()
        for loop in self._loops:
            loop.set()
        self.rooms.written(timeout=1.0)  # the joins' predictions still to be written
        self.hub.close()


def build(settings: Mapping[str, Any]) -> Services:
    """Every service of one process, from its resolved settings (not started)."""
    from webapp.web.metrics import Metrics  # late: after gunicorn's master set up the metrics

    client = connect(
        settings["REDIS_URL"],
        socket_timeout=float(settings["REDIS_SOCKET_TIMEOUT"]),
        connect_timeout=float(settings["REDIS_CONNECT_TIMEOUT"]),
    )
    keys = Keys(settings["REDIS_PREFIX"])
    scripts = Scripts(client)
    clock = Clock(settings["CLOCK"])
    secret = settings["SECRET_KEY"] or ""
    sweep_every = float(settings["SWEEP_INTERVAL"] or 0)
    # A coalesced check-in may wait for the batch in flight, then for its own
    bound = 2 * (float(settings["REDIS_SOCKET_TIMEOUT"]) + float(settings["REDIS_CONNECT_TIMEOUT"]))
    rooms = WaitingRooms(
        client, keys, scripts, clock=clock, sweep_every=sweep_every, coalesce=bound + 1
    )
    reports = Reports(rooms, refresh=settings["STATS_REFRESH"])
    chats = Chats(client, keys, scripts)
    hub = Hub(client, keys)
    relay = RoomRelay(hub, state=lambda room: room_state(reports, room))
    announcer = Announcer(relay)
    lobby = Lobby(rooms, reports)
    waitlists = Waitlists(rooms, secret=secret)
    revocations = Revocations(client, keys, hub, clock)
    visits = Visits(rooms, reports, chats, announcer, lobby, waitlists, revocations)
    hosts = str(settings.get("WEBHOOK_HOSTS") or "").split(",")
    webhooks = Webhooks(client, keys, scripts, clock, hosts=hosts)
    visits.webhooks = webhooks  # a new room writes its events at once if one is wanted
    passes = Passes(
        PassKeys(settings["PASS_KEY"], settings.get("PASS_KEY_PREVIOUS")),
        issuer=str(settings["PUBLIC_URL"]).rstrip("/"),
        secret=secret,
    )
    metrics = Metrics(reports, webhooks)
    challenges = Challenges(client, keys, secret, clock, tally=metrics)
    join_limits = JoinLimits(client, keys, scripts)
    policy = JoinPolicy.read(settings)
    identities = Identities(client, keys)
    refusals = JoinRefusals(client, keys, scripts)
    admission = Admission(
        reports,
        visits,
        waitlists,
        challenges,
        join_limits,
        policy,
        identities,
        clock,
        refusals,
    )
    return Services(
        client=client,
        keys=keys,
        scripts=scripts,
        clock=clock,
        rooms=rooms,
        reports=reports,
        lobby=lobby,
        chats=chats,
        socket_limits=ConnectionLimits(
            client,
            keys,
            scripts,
            server_id=f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}",
            ttl_seconds=float(settings["CONNECTION_TTL"]),
            max_per_user=int(settings["MAX_CONNECTIONS_PER_USER"]),
        ),
        hub=hub,
        relay=relay,
        chat_relay=ChatRelay(chats, hub, clock),
        visits=visits,
        waitlists=waitlists,
        sweeper=Sweeper(visits, sweep_every) if sweep_every else None,
        chat_upkeep=float(settings["CHAT_UPKEEP_SECONDS"] or 0),
        moves=Moves(client, keys, scripts, secret, clock=clock),
        claims=Claims(client, keys, scripts),
        live_claims=LiveClaims(client, keys, scripts),
        admins=Admins(client, keys, hashing=off_the_loop),
        mail=MailHealth(client, keys),
        metrics=metrics,
        challenges=challenges,
        passes=passes,
        seat_passes=SeatPasses(passes, keys, scripts),
        revocations=revocations,
        site_keys=SiteKeys(client, keys, scripts),
        join_limits=join_limits,
        admission=admission,
        webhooks=webhooks,
        room_reports=RoomReports(reports, visits.drops),
    )
