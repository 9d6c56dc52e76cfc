"""The JSON API for visitors' apps and scripts (docs/api.md, /api/openapi.json), and its
lean path (``lean``: a live room's check-in and plain join answered without Flask)."""

from __future__ import annotations

from webapp.views.api.routes import bp

__all__ = ["bp"]
