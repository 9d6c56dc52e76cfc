"""Thin blueprints: parse the request, call the domain, render. Each reaches the app's
services through these typed accessors."""

from __future__ import annotations

from flask import current_app

from webapp.domain.admission import Admission
from webapp.domain.challenge import Challenges
from webapp.domain.chat import Chats
from webapp.domain.moves import Moves
from webapp.domain.passes import Passes
from webapp.domain.reports import Reports
from webapp.domain.room_report import RoomReports
from webapp.domain.site_keys import SiteKeys
from webapp.domain.visits import Visits
from webapp.domain.waitlist import Waitlists
from webapp.domain.webhooks import Webhooks
from webapp.services import Services


def services() -> Services:
    found: Services = current_app.extensions["services"]
    return found


def chats() -> Chats:
    return services().chats


def visits() -> Visits:
    return services().visits


def reports() -> Reports:
    return services().reports


def waitlists() -> Waitlists:
    return services().waitlists


def moves() -> Moves:
    return services().moves


def challenges() -> Challenges:
    return services().challenges


def passes() -> Passes:
    return services().passes


def site_keys() -> SiteKeys:
    return services().site_keys


def webhooks() -> Webhooks:
    return services().webhooks


def admission() -> Admission:
    return services().admission


def room_reports() -> RoomReports:
    return services().room_reports
