"""The control panel (HTML, behind the admin's login): the rooms, a room's page and its
audit log and its report, settings, people, a waitlist's and a drop's actions, site keys,
webhooks; the login itself and ``flask admin``; the panel's forms, charts, words and
template filters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Flask

from webapp.views.admin import (
    auth,
    drops,
    filters,
    page,
    people,
    report,
    rooms,
    settings,
    site_keys,
    waitlist,
    webhooks,
)

if TYPE_CHECKING:
    from webapp.services import Services

# The panel's pages, then its actions
PANELS = (rooms, settings, page, people, waitlist, drops, site_keys, report, webhooks)


def init_app(app: Flask, built: Services) -> None:
    filters.init_app(app)  # times in the admin's zone, spans, the panel's words
    auth.init_app(app, built)  # /admin/login, `flask admin`
    for panel in PANELS:  # behind that login
        app.register_blueprint(panel.bp)
