"""The one rule for a "go back to" target (webapp/web/local_paths.py): a path of this site,
never a way to another one, as a browser would read it."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import hypothesis.strategies as st
import pytest
from hypothesis import example, given

from webapp.web.local_paths import is_local_path

BASE = "https://site.example/rooms/hall"
C0_OR_SPACE = "".join(map(chr, range(0x21)))

CASES = [
    ("/", True),
    ("/rooms/hall", True),
    ("/admin/?tab=rooms", True),
    ("/shop/item?x=1&y=2#reviews", True),
    ("/%0d%0aSet-Cookie", True),  # percent-encoded text is only text in a path
    ("/%2F%2Fevil.example", True),
    ("/caf\u00e9", True),
    ("/a:b", True),
    ("/admin?next=//evil.example", True),  # the query is this page's business
    ("//evil.example", False),
    ("///evil.example", False),  # a browser's host: evil.example
    ("/\\evil.example", False),
    ("/\\/evil.example", False),
    ("/ok?back=\\x", False),  # a backslash anywhere
    ("/\tevil", False),
    ("/\t/evil.example", False),
    ("/a\nb", False),
    ("/a\r\nSet-Cookie: x=1", False),
    ("/a b", False),
    ("/a\x00", False),
    ("/a\x7f", False),
    ("/a\x85", False),  # C1 control
    ("/a\u2028b", False),  # line separator
    ("/a\u00a0b", False),  # no-break space
    ("/a\u202eb", False),  # right-to-left override
    ("https://evil.example", False),
    ("https://evil.example/", False),
    ("javascript:alert(1)", False),
    ("http:/evil.example", False),
    ("", False),
    ("relative", False),
    ("rooms/hall", False),
    (" /rooms/hall", False),
    ("\t//evil.example", False),
]


@pytest.mark.parametrize(("raw", "accepted"), CASES)
def test_table(raw: str, accepted: bool) -> None:
    """Each case is accepted or refused as the table says."""
    assert is_local_path(raw) is accepted


def browser_reads(raw: str) -> str:
    """What a browser makes of a relative URL before resolving it (the WHATWG URL
    parser): C0 controls and spaces trimmed at both ends, tabs and newlines dropped
    anywhere, a backslash taken for a slash (http and https)."""
    trimmed = raw.strip(C0_OR_SPACE)
    return "".join(ch for ch in trimmed if ch not in "\t\n\r").replace("\\", "/")


TRICKY = "/\\:@?#.%aZ09\t\n\r \x00\x0b\x7f\x85\u00a0\u2028\u202e\u00e9"
targets = st.one_of(
    st.text(),
    st.text(alphabet=TRICKY, max_size=12),
    st.builds(lambda rest: "/" + rest, st.text(alphabet=TRICKY, max_size=12)),
    st.builds(lambda rest: "/" + rest, st.text()),
)


@given(targets)
@example("///evil.example")
@example("/\\/evil.example")
@example("/\t/evil.example")
def test_what_is_accepted_stays_on_this_site(raw: str) -> None:
    """Whatever is accepted names no scheme or host, even with backslashes read as
    slashes, and a browser's reading of it is still a path with one leading slash that
    resolves on this site."""
    if not is_local_path(raw):
        return
    assert not urlsplit(raw.replace("\\", "/")).netloc
    read = browser_reads(raw)
    assert read.startswith("/") and not read.startswith("//")
    parts = urlsplit(read)
    assert not parts.scheme and not parts.netloc
    assert urlsplit(urljoin(BASE, read)).netloc == "site.example"
