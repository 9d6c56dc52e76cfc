"""Thin blueprints: parse the request, call the domain, render."""

from __future__ import annotations

from flask import current_app

from webapp.domain.chat import Chats
from webapp.domain.lobby import Lobby
from webapp.domain.rooms import WaitingRooms


def rooms() -> WaitingRooms:
    engine: WaitingRooms = current_app.extensions["rooms"]
    return engine


def lobby() -> Lobby:
    service: Lobby = current_app.extensions["lobby"]
    return service


def chats() -> Chats:
    service: Chats = current_app.extensions["chats"]
    return service
