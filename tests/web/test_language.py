"""The visitor's language: Accept-Language, the footer's picker, <html lang>, the JS words."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

LANG = re.compile(r'<html lang="([a-z]+)"')
STRINGS = re.compile(r'<script type="application/json" id="js-strings">(.*?)</script>')


def lang_of(html: str) -> str:
    match = LANG.search(html)
    assert match, "no <html lang>"
    return match.group(1)


def js_strings(html: str) -> dict[str, str]:
    match = STRINGS.search(html)
    assert match, "no JS strings block"
    strings: dict[str, str] = json.loads(match.group(1))
    return strings


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("de-DE,de;q=0.9,en;q=0.8", "de"),
        ("es-MX,es;q=0.9", "es"),
        ("fr-FR,fr;q=0.9,es;q=0.5", "fr"),
        ("it-IT,it;q=0.9", "it"),
        ("pt-BR,pt;q=0.9,en;q=0.5", "pt"),
        ("nl-BE,nl;q=0.9", "nl"),
        ("pl-PL", "pl"),
        ("ja-JP,ja;q=0.9,en-US;q=0.8", "ja"),
        ("ar-EG,ar;q=0.9", "ar"),
        ("sv-SE,ko;q=0.9,ja;q=0.5", "ja"),
        ("sv-SE", "en"),
        ("", "en"),
    ],
)
def test_language_from_accept_language(visitor: Any, header: str, expected: str) -> None:
    """The best match of Accept-Language among the ten languages sets <html lang>; English
    else."""
    reply = visitor.client.get("/", headers={"Accept-Language": header} if header else {})
    assert lang_of(reply.get_data(as_text=True)) == expected
    assert "Accept-Language" in reply.headers["Vary"]


def test_german_and_spanish_error_pages(visitor: Any) -> None:
    """An error page speaks the visitor's language, footer and JS words included."""
    german = visitor.client.get("/no-such-page", headers={"Accept-Language": "de"})
    page = german.get_data(as_text=True)
    assert german.status_code == 404
    assert "Unter dieser Adresse gibt es nichts" in page
    assert "Zurück zur Übersicht" in page
    assert js_strings(page)["live"] == "Live"
    assert js_strings(page)["reconnecting"] == "Neu verbinden …"
    spanish = visitor.client.get("/no-such-page", headers={"Accept-Language": "es"})
    page = spanish.get_data(as_text=True)
    assert "No hay nada en esta dirección" in page
    assert js_strings(page)["new_messages_other"] == "%(num)s mensajes nuevos"


def test_picker_remembers_the_choice(visitor: Any) -> None:
    """The picker's POST sets a cookie that beats Accept-Language, and goes back."""
    token = visitor.csrf("/")
    reply = visitor.client.post(
        "/language", data={"lang": "de", "next": "/no-such-page", "csrf_token": token}
    )
    assert reply.status_code == 303
    assert reply.headers["Location"] == "/no-such-page"
    page = visitor.client.get("/", headers={"Accept-Language": "es"}).get_data(as_text=True)
    assert lang_of(page) == "de"
    assert 'value="de" lang="de" selected' in page
    token = visitor.csrf("/")
    visitor.client.post("/language", data={"lang": "es", "next": "/", "csrf_token": token})
    assert lang_of(visitor.client.get("/").get_data(as_text=True)) == "es"


def test_picker_needs_csrf_and_a_known_language(visitor: Any) -> None:
    """Without the CSRF token, or with a language we lack, nothing is remembered."""
    refused = visitor.client.post("/language", data={"lang": "de", "next": "/"})
    assert refused.status_code == 400
    token = visitor.csrf("/")
    unknown = visitor.client.post(
        "/language", data={"lang": "xx", "next": "/", "csrf_token": token},
        headers={"Accept-Language": "es"},
    )  # fmt: skip
    assert unknown.status_code == 400
    assert "No ofrecemos ese idioma" in unknown.get_data(as_text=True)
    assert lang_of(visitor.client.get("/").get_data(as_text=True)) == "en"


def test_picker_never_sends_to_another_site(visitor: Any) -> None:
    """A `next` that is not a path of this site goes to the lobby."""
    token = visitor.csrf("/")
    for wanted in (
        "https://evil.example/",
        "//evil.example/",
        "/\\evil.example",
        "/\t/evil.example",
        "///evil.example/",  # a browser reads both as //evil.example/; they passed the
        # old rule and only Werkzeug's encoding of Location kept them on this site
        "/\\/evil.example",
    ):
        reply = visitor.client.post(
            "/language", data={"lang": "es", "next": wanted, "csrf_token": token}
        )
        assert reply.headers["Location"] == "/"


def test_room_errors_in_the_visitors_language(make_visitor: Any, make_room: Any) -> None:
    """A refusal of the engine reads in German on a page, in English in the API."""
    guest = make_visitor("Ada")
    make_room("hall", status="closed")
    page = guest.join("hall", headers={"Accept-Language": "de"})
    assert page.status_code == 409
    assert "Er nimmt gerade keine neuen Besucher auf." in page.get_data(as_text=True)
    api = guest.client.get("/api/rooms/nope/qsize", headers={"Accept-Language": "de"})
    assert api.get_json()["error"] == "no room named 'nope'"


def test_csrf_refusal_in_spanish(visitor: Any) -> None:
    """The expired-form page is translated too."""
    reply = visitor.client.post("/name", data={"name": "Ana"}, headers={"Accept-Language": "es"})
    assert reply.status_code == 400
    assert "Este formulario ha caducado" in reply.get_data(as_text=True)


def test_admin_panel_stays_english(visitor: Any) -> None:
    """The panel's pages are English whatever the browser asks, and offer no picker."""
    page = visitor.client.get("/admin/login", headers={"Accept-Language": "de"})
    text = page.get_data(as_text=True)
    assert lang_of(text) == "en"
    assert 'id="language-choice"' not in text


def test_error_page_titles_say_what_happened_not_a_number(visitor: Any) -> None:
    """The tab's title of an error page is its heading, in words, never a status code."""
    for lang, heading in (
        ("en", "We could not find that page"),
        ("de", "Diese Seite haben wir nicht gefunden"),
    ):
        page = visitor.client.get("/nowhere", headers={"Accept-Language": lang})
        text = page.get_data(as_text=True)
        assert page.status_code == 404
        assert re.search(r"<title>(.*?)</title>", text).group(1).startswith(f"{heading} · ")  # type: ignore[union-attr]
        assert "404" not in re.search(r"<title>(.*?)</title>", text).group(1)  # type: ignore[union-attr]


def test_visitor_pages_in_german_and_spanish(make_visitor: Any, make_room: Any) -> None:
    """The lobby, the waiting page and the room page by Accept-Language; the wait by Babel."""
    make_room("hall", capacity=1)
    ann, bob = make_visitor("Ann"), make_visitor("Bob")
    room = ann.join("hall", headers={"Accept-Language": "es"})
    text = room.get_data(as_text=True)
    assert 'Estás en <span class="room-name">hall</span>' in text
    assert "Salir de la sala" in text and "Código de soporte" in text
    waiting = bob.join("hall", headers={"Accept-Language": "de-AT,de;q=0.9"})
    text = waiting.get_data(as_text=True)
    assert lang_of(text) == "de"
    assert "Platz 1 in der Schlange · hall" in text  # the tab's title
    assert "Ihr Platz in der Schlange" in text and "Die Schlange verlassen" in text
    lobby = bob.client.get("/", headers={"Accept-Language": "es"}).get_data(as_text=True)
    assert "Salas" in lobby and "Tus puestos" in lobby and "Volver a tu puesto" in lobby


@pytest.mark.parametrize(
    ("lang", "ranged", "single", "retry"),
    [
        ("en", "about 4 to 5 minutes", "about 2 hours", "1 minute"),
        ("de", "etwa 4 bis 5 Minuten", "etwa 2 Stunden", "1 Minute"),
        ("es", "entre 4 y 5 minutos", "alrededor de 2 horas", "1 minuto"),
    ],
)
def test_waits_are_written_for_the_locale(
    app: Any, lang: str, ranged: str, single: str, retry: str
) -> None:
    """Wait ranges by the catalogue's plurals, single durations by Babel's format_timedelta."""
    from flask_babel import format_timedelta

    from webapp.domain.estimate import Estimate
    from webapp.views.shared.words import wait_words

    with app.test_request_context("/", headers={"Accept-Language": lang}):
        assert wait_words(Estimate(270.0, 90.0)) == ranged
        assert wait_words(Estimate(7200.0, 0.0)) == single
        assert format_timedelta(60) == retry


def test_a_wait_that_may_end_within_the_hour_is_said_in_minutes(app: Any) -> None:
    """A range from 12 to 72 minutes is "about 12 to 72 minutes", not "about 1 to 2
    hours" (which said more than an hour while the clock time beside it said 42
    minutes); a range that starts past an hour, or runs past three, is said in hours."""
    from webapp.domain.estimate import Estimate
    from webapp.views.shared.words import wait_words

    with app.test_request_context("/", headers={"Accept-Language": "en"}):
        assert wait_words(Estimate(42 * 60, (30 * 60) ** 2)) == "about 12 to 72 minutes"
        assert wait_words(Estimate(100 * 60, (30 * 60) ** 2)) == "about 1 to 3 hours"
        assert wait_words(Estimate(2 * 3600, 6000.0**2)) == "about 1 to 4 hours"


@pytest.mark.parametrize(
    ("header", "start", "words"),
    [
        ("ar", '<html lang="ar" dir="rtl" data-locale="ar">', "لا يوجد شيء على هذا العنوان"),
        ("ar-EG,ar;q=0.9", '<html lang="ar" dir="rtl" data-locale="ar-EG-u-nu-latn">', "لا يوجد"),
        ("ja-JP", '<html lang="ja" dir="ltr" data-locale="ja-JP">', "このアドレスには何も"),
        ("fr", '<html lang="fr" dir="ltr" data-locale="fr">', "Il n'y a rien à cette adresse"),
        ("en", '<html lang="en" dir="ltr" data-locale="en">', "Nothing lives at this address"),
    ],
)
def test_direction_and_digits_follow_the_language(
    visitor: Any, header: str, start: str, words: str
) -> None:
    """Arabic pages read right to left (<html dir="rtl">); where a browser would write other
    digits (Egypt's ٣), the scripts are asked for the Latin ones Babel writes on the server."""
    page = visitor.client.get("/no-such-page", headers={"Accept-Language": header})
    text = page.get_data(as_text=True)
    assert start in text
    assert words in html.unescape(text)


def test_the_picker_offers_every_language_in_its_own_words(visitor: Any) -> None:
    """Each of the ten languages is an option of the picker, named as its readers name it."""
    text = visitor.client.get("/").get_data(as_text=True)
    for code, name in [("fr", "Français"), ("pl", "Polski"), ("ja", "日本語"), ("ar", "العربية")]:
        assert f'<option value="{code}" lang="{code}">{name}</option>' in text
    assert len(re.findall(r'<option value="[a-z]+" lang=', text)) == 10


@pytest.mark.parametrize(
    ("lang", "forms"),
    [
        ("en", {"one": "%(num)s new message", "other": "%(num)s new messages"}),
        (
            "pl",
            {
                "one": "%(num)s nowa wiadomość",
                "few": "%(num)s nowe wiadomości",
                "many": "%(num)s nowych wiadomości",
            },
        ),
        (
            "ar",
            {
                "zero": "لا رسائل جديدة",
                "one": "رسالة جديدة واحدة",
                "two": "رسالتان جديدتان",
                "few": "%(num)s رسائل جديدة",
                "many": "%(num)s رسالة جديدة",
                "other": "%(num)s رسالة جديدة",
            },
        ),
        ("ja", {"other": "新着メッセージ%(num)s件"}),
    ],
)
def test_the_scripts_get_every_plural_form(visitor: Any, lang: str, forms: dict[str, str]) -> None:
    """A plural reaches the scripts once per plural category of the language (the names
    Intl.PluralRules gives shared.js), each the catalogue's form for such a number."""
    page = visitor.client.get("/no-such-page", headers={"Accept-Language": lang})
    strings = js_strings(page.get_data(as_text=True))
    given = {
        key.removeprefix("new_messages_"): value
        for key, value in strings.items()
        if key.startswith("new_messages_")
    }
    assert {category: given[category] for category in forms} == forms
    assert set(given) - set(forms) <= {"other"}  # Polish has "other" for fractions only


@pytest.mark.parametrize(
    ("lang", "poor"),
    [("en", "roughly 2 to 8 minutes"), ("de", "ungefähr 2 bis 8 Minuten"),
     ("es", "aproximadamente entre 2 y 8 minutos")],
)  # fmt: skip
def test_a_poor_record_widens_the_words(app: Any, lang: str, poor: str) -> None:
    """Where the room's estimates have been poor, the same estimate (240 to 300 s: "about 4
    to 5 minutes") reads wider: "roughly 2 to 8 minutes"."""
    from webapp.domain.estimate import Estimate
    from webapp.views.shared.words import wait_words

    with app.test_request_context("/", headers={"Accept-Language": lang}):
        assert wait_words(Estimate(270.0, 900.0), poor=True) == poor
