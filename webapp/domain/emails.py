"""Email addresses people sign up or ask to be told with (waitlists and live rooms
alike): checked by syntax (no DNS lookup) and against disposable domains, and keyed so
that one mailbox is one key. No Flask here."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import NamedTuple

from email_validator import EmailNotValidError, validate_email

from webapp.domain.refusals import InvalidInput

# Mail providers that ignore parts of the local part: (canonical domain, dots ignored,
# "+tag" ignored). Only these are folded; elsewhere a dot or a plus may be significant.
MAX_EMAIL = 320  # characters of an address looked at: RFC 5321's longest path
PROVIDERS = {
    "gmail.com": ("gmail.com", True, True),
    "googlemail.com": ("gmail.com", True, True),
    "outlook.com": ("outlook.com", False, True),
    "hotmail.com": ("hotmail.com", False, True),
    "live.com": ("live.com", False, True),
    "icloud.com": ("icloud.com", False, True),
    "me.com": ("me.com", False, True),
    "fastmail.com": ("fastmail.com", False, True),
    "proton.me": ("proton.me", False, True),
    "protonmail.com": ("protonmail.com", False, True),
}


class EmailRefused(InvalidInput):
    """An email that cannot sign up: ``reason`` is syntax or disposable."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class EmailAddress(NamedTuple):
    address: str  # where mail goes: as written, its domain normalised
    key: str  # one per mailbox: lower case, provider aliases folded (the dedupe key)


@cache
def disposable_domains() -> frozenset[str]:
    """The bundled list of disposable mail domains (``disposable_domains.txt``)."""
    text = resources.files("webapp.domain").joinpath("disposable_domains.txt").read_text()
    lines = (line.split("#", 1)[0].strip().lower() for line in text.splitlines())
    return frozenset(line for line in lines if line)


def is_disposable(domain: str) -> bool:
    """The domain or one of its parents is on the list (``x.mailinator.com`` too)."""
    parts = domain.lower().rstrip(".").split(".")
    listed = disposable_domains()
    return any(".".join(parts[i:]) in listed for i in range(len(parts) - 1))


def normalise_email(raw: object) -> EmailAddress:
    """The email checked by syntax (no DNS lookup) and against disposable domains, with
    its key: lower case, and for providers that ignore them, dots and +tags dropped and
    aliases folded (googlemail.com is gmail.com)."""
    if not isinstance(raw, str):
        raise EmailRefused("syntax", "email must be text")
    try:
        valid = validate_email(raw.strip(), check_deliverability=False)
    except EmailNotValidError as error:
        raise EmailRefused("syntax", f"that email address is not valid: {error}") from None
    domain = valid.ascii_domain.lower()
    if is_disposable(domain):
        raise EmailRefused("disposable", "please sign up with a lasting email address")
    local = valid.local_part.lower()
    rule = PROVIDERS.get(domain)
    if rule is not None:
        domain, no_dots, no_tags = rule
        folded = local.split("+", 1)[0] if no_tags else local
        folded = folded.replace(".", "") if no_dots else folded
        local = folded or local
    return EmailAddress(valid.normalized, f"{local}@{domain}")
