"""The site gate (docs/gate.md): the forward-auth endpoint a proxy asks before each
request to the protected site, the published keys, the release, and ``FreshGate``
(``fresh``), a fresh pass's 204 answered before Flask."""

from __future__ import annotations

from webapp.views.gate.fresh import init_app
from webapp.views.gate.routes import bp

__all__ = ["bp", "init_app"]
