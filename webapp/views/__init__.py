"""Thin blueprints: parse the request, call the domain, render."""

from __future__ import annotations

from typing import Any

from flask import current_app

from webapp.domain.lobby import Lobby
from webapp.domain.rooms import WaitingRooms


def rooms() -> WaitingRooms:
    engine: WaitingRooms = current_app.extensions["rooms"]
    return engine


def lobby() -> Lobby:
    service: Lobby = current_app.extensions["lobby"]
    return service


def redis_client() -> Any:
    return current_app.extensions["redis"]
