"""What the waiting page's lean poll reads of a request (webapp/views/visitor/lean_poll.py)
without werkzeug's and the standard library's general parsers: the query's first values
and the cookies, held to what Flask's request reads for any header or query."""

from __future__ import annotations

from urllib.parse import parse_qsl

from hypothesis import example, given
from hypothesis import strategies as st
from werkzeug.sansio.http import parse_cookie

from webapp.views.visitor.lean_poll import first_values
from webapp.web.cookies import cookies_of

PIECES = st.sampled_from(
    ["a", "t", "seen", "=", "&", "%2C", "%", "+", "%zz", "é", ",", ".", "1", " "]
)
COOKIE_PIECES = st.sampled_from(
    ["session", "lang", "=", ";", " ", "\t", '"', "\\", "de", "eyJ.x-y_z", ",", "é", "=="]
)


@given(st.lists(PIECES, max_size=20).map("".join))
@example("seen=1&t=abc&shown=899.0%2C1012500.0%2C17.5")
@example("t=&t=2&&x")
def test_the_query_reads_as_parse_qsl_reads_it(query: str) -> None:
    expected: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        expected.setdefault(name, value)
    assert first_values(query) == expected


@given(st.lists(COOKIE_PIECES, max_size=20).map("".join))
@example("session=eyJ0.abc; lang=de")
@example('lang="d\\145"; session = x ;; lang=en')
@example("a=b c; lang=de")
@example("session=\xe9; lang=\xff")  # bytes that are no UTF-8, as the server decoded them
def test_the_cookies_read_as_flask_reads_them(header: str) -> None:
    for environ in (header, header.encode().decode("latin-1")):  # a header as it arrives
        assert cookies_of(environ) == parse_cookie(environ).to_dict()
