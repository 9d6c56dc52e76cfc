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
from webapp.infra import logs
from webapp.redis.connection import redacted
from webapp.services import build as build_services
from webapp.web.flask_json import OrjsonProvider
from webapp.web.trusted_proxies import TrustedProxyFix, trusted_networks

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
    logs.configure()

    config.resolve(app.config)  # the data directory, the secret, Redis: as the mailer does
    log.info("Redis: %s", redacted(app.config["REDIS_URL"]))

    services = build_services(app.config)
    app.extensions["services"] = services
    # Pages promise an email only when one can be sent (the mailer checks its server)
    app.jinja_env.globals["mail_works"] = services.mail.sendable
    app.jinja_env.globals["mail_status"] = services.mail.read

    from webapp.views import admin, admin_api, api, gate, ops, visitor
    from webapp.views.api import lean
    from webapp.views.ops import metrics as metrics_views
    from webapp.views.shared import errors, extras
    from webapp.views.visitor import lean_poll
    from webapp.web import i18n, security

    i18n.init_app(app)  # the visitor's language; compiles the catalogues if need be
    errors.init_app(app)
    lean.init_app(app, services)  # a live room's check-in and join without Flask
    lean_poll.init_app(app, services)  # the waiting page's poll of a place still waiting
    if app.config["PROXY_COUNT"]:
        # X-Forwarded-Prefix: the app mounted under a path (https://shop.example/queue/):
        # every URL it builds (url_for: links, assets, htmx, forms, the websocket) has it.
        # Only from WEBAPP_TRUSTED_PROXIES: anyone else's forwarded headers are ignored.
        app.wsgi_app = TrustedProxyFix(  # type: ignore[method-assign]
            app.wsgi_app,
            int(app.config["PROXY_COUNT"]),
            trusted_networks(app.config["TRUSTED_PROXIES"]),
        )
    security.init_app(app, services.keys, exempt=[api.bp, admin_api.bp, gate.bp])  # tokens
    app.register_blueprint(extras.bp)  # room headings, clock times, the favicon
    ops.init_app(app)  # /healthz, /readyz
    app.register_blueprint(api.bp)  # the JSON API
    app.register_blueprint(gate.bp)  # site rooms: /gate/<room>, the keys, the release
    app.register_blueprint(admin_api.bp)  # the admin's JSON API
    visitor.init_app(app)  # the visitors' pages and the room's socket
    admin.init_app(app, services)  # /admin/login, `flask admin`, the control panel
    metrics_views.init_app(app, services)  # /metrics, and every request timed
    gate.init_app(app, services)  # a fresh pass's 204 without Flask: the hottest request

    services.start()
    return app
