"""The one rule for a "go back to" target a visitor or a proxy hands us (the language
picker's ``next``, the admin login's ``next``, the gate's X-Original-URI and the waiting
page's ``?next=``): it must be a path of this site, never a way to another one (an open
redirect). No Flask here: the views add their own limits (the panel only, a length).
"""

from __future__ import annotations

from urllib.parse import urlsplit


def is_local_path(raw: str) -> bool:
    """Whether ``raw`` is a path (with any query) of this origin, read the way a browser
    reads a Location: it drops tabs and newlines anywhere and takes a backslash for a
    slash, so ``/\\evil``, ``/<tab>/evil`` and ``///evil`` all name the host ``evil``.
    Those characters are refused outright, as is a space or any other character that is
    not printable (C0 and C1 controls, DEL, Unicode separators and format characters),
    none of which a real path of ours holds unencoded. Percent-encoded text is plain
    text here: ``/%0d%0a`` is a path."""
    if not raw.startswith("/") or raw.startswith("//") or "\\" in raw:
        return False
    if " " in raw or not raw.isprintable():  # isprintable: False for ord < 0x20, 0x7f, ...
        return False
    parts = urlsplit(raw)
    return not parts.scheme and not parts.netloc
