"""The admin's JSON API under /api/admin (bearer token ``WEBAPP_ADMIN_TOKEN``)."""

from __future__ import annotations

from webapp.views.admin_api import webhooks  # noqa: F401 (its routes, on the same blueprint)
from webapp.views.admin_api.routes import bp

__all__ = ["bp"]
