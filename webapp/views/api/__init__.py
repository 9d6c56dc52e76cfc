"""The JSON API for visitors' apps and scripts (docs/api.md, /api/openapi.json), and its
lean check-in (``lean``: a live room's position answered without Flask)."""

from __future__ import annotations

from webapp.views.api.routes import bp

__all__ = ["bp"]
