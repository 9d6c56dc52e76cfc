"""A request's cookies, read on the lean WSGI paths (the waiting page's poll, the
gate's fresh check) as Flask's ``request.cookies`` reads them."""

from __future__ import annotations

from werkzeug.sansio.http import parse_cookie as read_cookies


def cookies_of(header: str) -> dict[str, str]:
    """Each cookie's first value, as Flask's ``request.cookies`` reads them (werkzeug's
    ``sansio`` parser, on the header as the server decoded it); a header of plain pairs
    (as this app's cookies are) without its regular expression."""
    found: dict[str, str] = {}
    if not header.isascii() or '"' in header:
        return read_cookies(header).to_dict()
    for part in header.split(";"):
        part = part.strip(" \t")
        if not part:
            continue
        name, _, value = part.partition("=")
        name, value = name.rstrip(" \t"), value.lstrip(" \t")
        if not name or any(blank in name or blank in value for blank in " \t"):
            return read_cookies(header).to_dict()  # a blank inside: werkzeug's rules
        found.setdefault(name, value)
    return found
