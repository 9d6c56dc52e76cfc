"""The panel's site keys of a site room (issue 29): make one (shown once, on the page
the form answers with: never in a redirect's flash, which the session cookie carries),
and revoke one. ``SiteKeys`` audits both under the admin's name."""

from __future__ import annotations

from flask import flash, request
from flask.typing import ResponseReturnValue

from webapp.domain.site_keys import SiteKeyNotFound
from webapp.views import reports, site_keys
from webapp.views.admin.auth import login_required
from webapp.views.admin.panel import back, existing, panel_blueprint, who
from webapp.views.admin.room import room_page

bp = panel_blueprint("admin_site_keys", __name__)


@bp.post("/rooms/<room>/site-keys")
@login_required
def make(room: str) -> ResponseReturnValue:
    """A new site key, on the room's page this once (``no-store``: never cached)."""
    existing(room)
    made = site_keys().make(room, request.form.get("label", ""), reports().now(), who=who())
    return room_page(room, 201, made_key=made)


@bp.post("/rooms/<room>/site-keys/<key_id>/revoke")
@login_required
def revoke(room: str, key_id: str) -> ResponseReturnValue:
    existing(room)
    if not site_keys().revoke(room, key_id[:64], reports().now(), who=who()):
        raise SiteKeyNotFound("this room has no live site key of that id")
    flash(f"Revoked the site key {key_id}: the site can no longer count stock with it.")
    return back(room)
