"""A site room's ``bypass_paths`` (issue 30): paths of the site the gate lets through
without a pass (``/robots.txt``, ``/static/*``, ``/healthz``). No Flask here.

A pattern is a path starting with ``/``; ``*`` stands for any run of characters, ``/``
included (``/static/*`` covers ``/static/css/site.css``); anything else is itself. The
gate matches the path of the original request (without its query), percent-decoded, as
the proxy routes it; a path with a dot segment, an empty one (``//``) or a backslash is
never let through, since a proxy or a site may read it as another path
(``/static/../checkout``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import unquote

MOST_PATTERNS = 50
PATTERN = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
UNSAFE = re.compile(r"//|\\|(^|/)\.\.?(/|$)|[\x00-\x20\x7f]")


def patterns(text: str) -> tuple[str, ...]:
    """The patterns of the setting's text: one per line (or separated by spaces)."""
    return tuple(re.findall(r"[^ \n]+", text))


def problem(text: str) -> str | None:
    """What is wrong with the setting's text, in words, or None (the settings rule)."""
    found = patterns(text)
    if len(found) > MOST_PATTERNS:
        return f"must hold at most {MOST_PATTERNS} paths"
    for pattern in found:
        shown = pattern[:60]
        if not PATTERN.fullmatch(pattern):
            return (
                f"must be paths starting with / (letters, digits, -._~!$&'()*+,;=:@ and "
                f"* for any characters), one per line: {shown!r} is not"
            )
        if UNSAFE.search(pattern):
            return f"must be plain paths, without //, . or .. segments: {shown!r} is not"
        if not pattern.strip("/*"):
            return f"must not let every path through: {shown!r} would"
    return None


@lru_cache(maxsize=256)
def _compiled(text: str) -> re.Pattern[str] | None:
    parts = ["".join(".*" if c == "*" else re.escape(c) for c in p) for p in patterns(text)]
    return re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None


def bypasses(text: str, uri: str) -> bool:
    """Whether the request for ``uri`` (a path and query, as the proxy names it) goes
    through without a pass under the setting ``text``."""
    matcher = _compiled(text)
    if matcher is None or not uri.startswith("/"):
        return False
    path = unquote(uri.split("?", 1)[0].split("#", 1)[0], errors="replace")
    if UNSAFE.search(path) or "\ufffd" in path:
        return False
    return matcher.fullmatch(path) is not None
