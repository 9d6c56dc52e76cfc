"""The lobby: the engine's answers with a wait estimate and a poll interval attached
(``Standing``), for ``Visits``' join and check-in.

A room's settings, statistics, rates and calibration come from the process's cache of
them (``Reports.cache``, a ``webapp.domain.room_cache.RoomCache``), so a check-in costs
one script call and no extra reads. What is read without a change (the lobby's cards,
the wait at the back of the line) is ``Reports``'. A join whose admission limit came
from older settings is refused by the script and tried again with the settings read
afresh, so an admin's change holds from the next request on every worker and host.

The figure shown to a visitor is smoothed (``estimate.smooth``) from the figure shown
at their previous poll. That figure is carried by the client, not kept here, so any
worker process can answer any poll: the caller passes it back as ``shown`` (the text
of ``Standing.shown.dumps()``); without it the raw estimate is shown. Against it, too,
``Standing.trend`` says whether the line has slowed down or sped up since. Estimates
are made at the capacity the script answered with, so an admin's change of capacity
counts from the next check-in, and shown with the room's calibration (its range set by
its own record, ``webapp.domain.calibration``).
"""

from __future__ import annotations

from typing import NamedTuple

from webapp.domain import estimate
from webapp.domain.join_limits import NO_LIMITS, Counting
from webapp.domain.reports import Reports
from webapp.domain.rooms import (
    JoinRefused,
    QueueRejecting,
    SettingsChanged,
    Ticket,
    WaitingRooms,
)

JOIN_TRIES = 3  # a join refused for stale settings reads them again and retries
SEAT_ONLY = -1  # most people ahead of a join that takes a seat at once or nothing


class Standing(NamedTuple):
    """A ticket with what the visitor is told about it."""

    ticket: Ticket
    estimate: estimate.Estimate | None  # the figure to show (smoothed when possible)
    poll_after: float
    raw: estimate.Estimate | None = None  # the estimate before smoothing (calibrated)
    shown: estimate.Shown | None = None  # hand back as ``shown`` at the next poll
    trend: str | None = None  # "slower" or "faster" than the figure shown before said
    basis: str | None = None  # "typical" (the admin's typical stay) or "measured"; None: none
    method: str = "fifo"  # the room's queueing_method, which says what the figures mean
    chance: estimate.SeatChance | None = None  # random order: the chance of a seat soon
    model: estimate.Estimate | None = None  # the model's own, before the room's calibration


class Lobby:
    def __init__(
        self,
        rooms: WaitingRooms,
        reports: Reports,
    ) -> None:
        self.rooms = rooms
        self.reports = reports
        self._cache = reports.cache

    def join(
        self,
        room: str,
        identity: str = "",
        name: str = "",
        email: str = "",
        lang: str = "",
        limits: Counting = NO_LIMITS,
        seat_only: bool = False,
        puzzle_above: int | None = None,
    ) -> Standing:
        """``email`` (normalised) and ``lang``: told by email when a seat is offered.
        ``limits`` and ``puzzle_above``: checked by the join's own script
        (``WaitingRooms.join``). ``seat_only``: a seat at once or nothing (JoinRefused),
        never a place in line."""
        for _ in range(JOIN_TRIES - 1):
            try:
                return self._join(
                    room, identity, name, email=email, lang=lang, limits=limits,
                    seat_only=seat_only, puzzle_above=puzzle_above,
                )  # fmt: skip
            except SettingsChanged:
                self._cache.forget(room)
        return self._join(
            room, identity, name, checked=False, email=email, lang=lang, limits=limits,
            seat_only=seat_only, puzzle_above=puzzle_above,
        )  # fmt: skip

    def _join(
        self,
        room: str,
        identity: str,
        name: str,
        checked: bool = True,
        email: str = "",
        lang: str = "",
        limits: Counting = NO_LIMITS,
        seat_only: bool = False,
        puzzle_above: int | None = None,
    ) -> Standing:
        cached = self._cache.figures(room)
        settings = cached.settings
        max_ahead = SEAT_ONLY if seat_only else None
        rates = None  # only a room with a max_wait_seconds needs them before the join
        if not seat_only and settings is not None and settings.max_wait_seconds is not None:
            rates = self._cache.rates(room, self.reports.now())
            max_ahead = estimate.max_ahead_for(rates, settings.max_wait_seconds)
        version = cached.version if checked and settings is not None else None
        try:
            ticket = self.rooms.join(
                room,
                identity=identity,
                name=name,
                max_ahead=max_ahead,
                version=version,
                email=email,
                lang=lang,
                limits=limits,
                puzzle_above=puzzle_above,
            )
        except QueueRejecting:
            raise  # its own hint: the room turns joins away, whatever the line
        except JoinRefused as refused:
            if seat_only:  # no seat free: nobody asked to wait, so no retry to work out
                raise
            # How many must leave the line before a join passes, and how long that takes.
            most = [max_ahead] if max_ahead is not None else []
            if settings is not None and settings.max_line_length is not None:
                most.append(settings.max_line_length - 1)
            excess = refused.waiting - min(most, default=refused.waiting - 1)
            if rates is None:
                rates = self._cache.rates(room, self.reports.now())
            refused.retry_after = estimate.retry_after(rates, excess)
            raise
        return self.standing(room, ticket)

    def standing(self, room: str, ticket: Ticket, shown: str | None = None) -> Standing:
        cached = self._cache.figures(room, ticket.version)
        dropout = cached.settings.dropout_seconds if cached.settings else 30
        if ticket.seated:
            session = cached.settings.session_seconds if cached.settings else 600
            done = estimate.Estimate(0.0, 0.0)
            return Standing(ticket, done, round(min(session / 3, 30.0), 1), done)
        method = cached.settings.queueing_method if cached.settings else "fifo"
        raw = None
        rates = self._cache.rates(room, ticket.now, ticket.capacity)
        moving = ticket.room_status != "paused" and rates is not None
        if method in ("random", "passthrough"):
            # no place-based wait: a draw (the chance of a seat soon), or a seat coming
            poll = estimate.poll_after(dropout, ticket.position, None, ticket.window)
            chance = None
            if method == "random" and moving and rates is not None:
                chance = estimate.seat_chance(rates, ticket.waiting)
            return Standing(ticket, None, poll, method=method, chance=chance)
        model = None
        if moving and rates is not None:
            model = estimate.wait_for(rates, ticket.ahead, ticket.active)
            raw = self._cache.calibration(room, ticket.now).apply(model)
        # Polls follow the model's own range, as the check-in windows the scripts grant
        # do (windows.py): a range the record widened would multiply the check-ins.
        poll = estimate.poll_after(dropout, ticket.position, model, ticket.window)
        if raw is None or rates is None:
            return Standing(ticket, None, poll, method=method)
        before = estimate.Shown.loads(shown)
        figure = estimate.smooth(before, raw, ticket.now, rates.service)
        why = estimate.trend(before, rates.service)
        shown_now = estimate.Estimate(figure.wait, figure.variance)
        return Standing(ticket, shown_now, poll, raw, figure, why, rates.basis, method, model=model)
