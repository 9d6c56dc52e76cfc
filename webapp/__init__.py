"""A self-hosted virtual waiting room with live chat rooms.

``create_app()`` is the WSGI factory: ``gunicorn 'webapp:create_app()'``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask

from webapp import config
from webapp.jsonio import OrjsonProvider
from webapp.redis.connection import redacted
from webapp.services import build as build_services
from webapp.trusted_proxies import TrustedProxyFix, trusted_networks

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent


def _shipped(name: str) -> str:
    """``templates`` or ``static``: inside the installed package (a wheel ships them
    there), else beside the package in a source checkout."""
    packaged = HERE / name
    return str(packaged if packaged.is_dir() else HERE.parent / name)


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    app = Flask(
        __name__,
        template_folder=_shipped("templates"),
        static_folder=_shipped("static"),
    )
    config.load(app.config, test_config)
    app.json = OrjsonProvider(app)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if app.config["PROXY_COUNT"]:
        # X-Forwarded-Prefix: the app mounted under a path (https://shop.example/queue/):
        # every URL it builds (url_for: links, assets, htmx, forms, the websocket) has it.
        # Only from WEBAPP_TRUSTED_PROXIES: anyone else's forwarded headers are ignored.
        app.wsgi_app = TrustedProxyFix(  # type: ignore[method-assign]
            app.wsgi_app,
            int(app.config["PROXY_COUNT"]),
            trusted_networks(app.config["TRUSTED_PROXIES"]),
        )

    config.resolve(app.config)  # the data directory, the secret, Redis: as the mailer does
    log.info("Redis: %s", redacted(app.config["REDIS_URL"]))

    services = build_services(app.config)
    app.extensions["services"] = services
    # Pages promise an email only when one can be sent (the mailer checks its server)
    app.jinja_env.globals["mail_works"] = services.mail.sendable
    app.jinja_env.globals["mail_status"] = services.mail.read

    from webapp import i18n, security
    from webapp.views import (
        admin,
        admin_api,
        admin_auth,
        admin_drops,
        admin_page,
        admin_people,
        admin_settings,
        admin_site_keys,
        admin_waitlist,
        api,
        claims,
        drops,
        errors,
        extras,
        filters,
        gate,
        health,
        hot,
        language,
        line,
        move,
        pages,
        waitlist,
        ws,
    )
    from webapp.views import metrics as metrics_views

    i18n.init_app(app)  # the visitor's language; compiles the catalogues if need be
    errors.init_app(app)
    filters.init_app(app)  # times in UTC, spans, the panel's words
    hot.init_app(app, services)  # a live room's check-in without Flask (before the next)
    security.init_app(app, services.keys, exempt=[api.bp, admin_api.bp, gate.bp])  # tokens
    app.register_blueprint(health.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(gate.bp)  # site rooms: /gate/<room>, the keys, the release
    app.register_blueprint(admin_api.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(line.bp)  # the waiting page's poll, leaving, its email
    app.register_blueprint(language.bp)  # the footer's language picker
    app.register_blueprint(extras.bp)  # room headings, clock times, the favicon
    app.register_blueprint(move.bp)  # continue on another device
    app.register_blueprint(drops.bp)  # a scheduled drop's refusals (its pages: waitlist's)
    app.register_blueprint(waitlist.bp)  # a waitlist room's pages, /confirm links
    app.register_blueprint(claims.bp)  # /claim links from admission emails
    admin_auth.init_app(app, services)  # /admin/login, `flask admin`
    # the control panel, behind that login: its pages, then its actions
    panels = (admin, admin_settings, admin_page, admin_people, admin_waitlist, admin_drops,
              admin_site_keys)  # fmt: skip
    for panel in panels:
        app.register_blueprint(panel.bp)
    ws.init_app(app)
    metrics_views.init_app(app, services)  # /metrics, and every request timed
    gate.init_app(app, services)  # a fresh pass's 204 without Flask: the hottest request

    services.start()
    return app
