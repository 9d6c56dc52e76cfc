"""Logging in to the admin control panel (issue 11).

``/admin/login`` and ``/admin/logout``; ``login_required`` and ``current_admin()`` for
the panel's views; the ``flask admin`` commands; the ``admin`` account made from
``WEBAPP_ADMIN_PASSWORD``. While no account exists there is no panel at all: every
``/admin`` URL answers 404. Wrong logins count toward the same throttle as wrong admin
tokens (``webapp.web.security.credential_failures``); a login gives the browser a device
cookie (``webapp.web.admin_devices``), so strangers' wrong passwords never lock it out.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

import click
from flask import (
    Blueprint,
    Flask,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.cli import AppGroup
from flask.typing import ResponseReturnValue
from flask_limiter import RateLimitExceeded
from redis.exceptions import RedisError
from werkzeug.wrappers import Response

from webapp.config import ConfigError
from webapp.domain.admins import Admins, AdminSessions, InvalidAccount, check_name, check_password
from webapp.services import Services
from webapp.views import services
from webapp.web.admin_devices import give_device
from webapp.web.admin_session import REDIS_FAILED, PanelSession, PanelSessionInterface, in_panel
from webapp.web.local_paths import is_local_path
from webapp.web.login_limits import password_limited
from webapp.web.security import (
    credential_failures,
    refused_credentials,
    throttled,
    throttled_scope,
)

log = logging.getLogger(__name__)
bp = Blueprint("admin_auth", __name__, url_prefix="/admin")
throttle = credential_failures("admin-credentials")  # shared with the API's admin token
BOOTSTRAP_ACCOUNT = "admin"


def admins() -> Admins:
    return services().admins


def current_admin() -> str | None:
    """The name of the admin logged in on this request, None if nobody is."""
    if isinstance(session, PanelSession):
        return str(session["admin"])
    return None


def login_required(view: Callable[..., ResponseReturnValue]) -> Callable[..., ResponseReturnValue]:
    """For the panel's views: a page without a login goes to the login form (and comes
    back after it); an htmx request gets 401 with ``HX-Redirect`` to the form."""

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> ResponseReturnValue:
        if current_admin() is not None:
            return view(*args, **kwargs)
        if request.headers.get("HX-Request") == "true":
            # htmx swaps nothing on a 401, but follows HX-Redirect: the whole page goes
            page = urlsplit(request.headers.get("HX-Current-URL", ""))
            back = page.path.removeprefix(request.script_root)
            back += f"?{page.query}" if page.query else ""
            form = url_for("admin_auth.login", next=back or None)
            return "Please log in again.", 401, {"HX-Redirect": form}
        return redirect(url_for("admin_auth.login", next=request.full_path.rstrip("?")))

    return guarded


def safe_next(target: str | None) -> str:
    """Where to go after login: a path of this site (``webapp.web.local_paths``) in the
    panel, else the panel's home."""
    if target and is_local_path(target) and in_panel(urlsplit(target).path):
        return request.script_root + target
    return url_for("admin.overview")


@bp.get("/login")
def login() -> ResponseReturnValue:
    if current_admin() is not None:
        return redirect(safe_next(request.args.get("next")))
    return render_template("admin/login.html", next=request.args.get("next", ""))


@bp.post("/login")
@password_limited
@throttle  # registered first, so checked first: "from your address" when both are spent
def login_submit() -> ResponseReturnValue:
    name = request.form.get("name", "").strip()
    if not admins().verify(name, request.form.get("password", "")):
        refused_credentials("an admin login")
        page = render_template(
            "admin/login.html",
            error="Wrong name or password.",
            name=name,
            next=request.form.get("next", ""),
        )
        return page, 401
    response = redirect(safe_next(request.form.get("next")), 303)
    panel().log_in(current_app, session, name, response)
    give_device(response, name)  # its later logins are not held back by strangers'
    log.info("%r logged in to the panel from %s", name, request.remote_addr)
    return response


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    who = current_admin()
    response = redirect(url_for("admin_auth.login"), 303)
    panel().log_out(current_app, session, response)
    if who is not None:
        log.info("admin %s logged out", who)
    return response


@bp.errorhandler(RateLimitExceeded)
def too_many(error: RateLimitExceeded) -> ResponseReturnValue:
    _, headers = throttled(error)
    minutes = round(int(headers["Retry-After"]) / 60)
    wait = "a minute" if minutes <= 1 else f"{minutes} minutes"
    who = {
        "admin-account": "for this account",
        "admin-device": "from this browser",
        "admin-total": "on this panel",
    }.get(throttled_scope(error), "from your address")
    message = f"Too many wrong logins {who}. Please try again in about {wait}."
    return render_template("admin/login.html", error=message, throttled=True), 429, headers


def panel() -> PanelSessionInterface:
    return cast(PanelSessionInterface, current_app.session_interface)


def hide_panel() -> None:
    """No panel at all while no admin account exists. If Redis already failed this
    request (reading its panel session, or the waiting page's poll before Flask), that
    failure answers it: one wait, not two. (The first of the hooks.)"""
    failed = request.environ.get(REDIS_FAILED)
    if failed is not None:
        raise failed
    if in_panel(request.path) and not admins().any():
        abort(404)


def no_store(response: Response) -> Response:
    if in_panel(request.path):
        response.headers["Cache-Control"] = "no-store"  # no panel page after logout
    return response


admin_cli = AppGroup("admin", help="The accounts of the admin control panel.")


@admin_cli.command("add")
@click.argument("name")
def add_account(name: str) -> None:
    """Add the account NAME, or give it a new password (asked twice, hidden)."""
    try:
        check_name(name)
    except InvalidAccount as error:
        raise click.BadParameter(str(error), param_hint="NAME") from None
    password = click.prompt(
        "Password", hide_input=True, confirmation_prompt=True, value_proc=_password
    )
    new = admins().add(name, password)
    click.echo(f"Added {name}." if new else f"Changed the password of {name}; its logins ended.")


@admin_cli.command("remove")
@click.argument("name")
def remove_account(name: str) -> None:
    """Remove the account NAME (its logins end)."""
    if not admins().remove(name):
        raise click.ClickException(f"there is no account named {name!r}")
    click.echo(f"Removed {name}.")
    if not admins().any():
        click.echo("No account is left: every /admin page answers 404 until one is added.")


@admin_cli.command("list")
def list_accounts() -> None:
    """List the accounts' names."""
    for name in admins().names():
        click.echo(name)


def _password(value: str) -> str:
    try:
        return check_password(value)
    except InvalidAccount as error:
        raise click.BadParameter(str(error)) from None  # asked again


def init_app(app: Flask, built: Services) -> None:
    idle = int(app.config["ADMIN_SESSION_IDLE_SECONDS"])
    if idle < 1:
        raise ConfigError("WEBAPP_ADMIN_SESSION_IDLE_SECONDS must be at least 1")
    accounts = built.admins
    sessions = AdminSessions(built.client, built.keys, idle)
    app.session_interface = PanelSessionInterface(sessions, accounts)
    app.register_blueprint(bp)
    app.cli.add_command(admin_cli)
    # First of all: without an account, even a POST without a CSRF token gets 404
    app.before_request_funcs.setdefault(None, []).insert(0, hide_panel)
    app.after_request(no_store)
    _bootstrap(accounts, app.config["ADMIN_PASSWORD"])


def _bootstrap(accounts: Admins, password: str | None) -> None:
    """WEBAPP_ADMIN_PASSWORD: the account ``admin`` with that password (the quick start)."""
    if not password:
        return
    try:
        if accounts.ensure(BOOTSTRAP_ACCOUNT, password):
            log.info("WEBAPP_ADMIN_PASSWORD set the password of %r", BOOTSTRAP_ACCOUNT)
    except InvalidAccount as error:
        raise ConfigError(f"WEBAPP_ADMIN_PASSWORD: {error}") from None
    except RedisError as error:  # Redis is down at start: the app still serves
        log.error("WEBAPP_ADMIN_PASSWORD not applied, Redis failed: %s", error)
