"""The visitors' pages: the lobby, a room's page and its one join button, the waiting
page's poll, leaving and email, another device, a waitlist's pages and links, the
language picker, and the room's websocket. Routes only; what they share with the other
audiences (how a place is shown, the words) is ``webapp.views.shared``."""

from __future__ import annotations

from flask import Flask

from webapp.views.visitor import claims, language, line, move, pages, waitlist, ws


def init_app(app: Flask) -> None:
    app.register_blueprint(pages.bp)  # the lobby, the name, a room's page, its join
    app.register_blueprint(line.bp)  # the waiting page's poll, leaving, its email
    app.register_blueprint(language.bp)  # the footer's language picker
    app.register_blueprint(move.bp)  # continue on another device
    app.register_blueprint(waitlist.bp)  # a waitlist room's pages, /confirm links
    app.register_blueprint(claims.bp)  # /claim links from admission emails
    ws.init_app(app)  # the room's socket
