"""The proof of work's words (issue 25): why a join without a solution was refused, in
the visitor's language. Whether a join needs one, and the challenge itself, are the
admission's (``webapp.domain.admission``). No routes here."""

from __future__ import annotations

from webapp.web.i18n import _


def words() -> str:
    """Why a join without a solution was refused, in the visitor's language."""
    return _(
        "This room asks your browser to solve a small puzzle before you join, to keep "
        "bots out. Press the button: it takes a second or two (longer while very many "
        "are joining), and needs JavaScript."
    )
