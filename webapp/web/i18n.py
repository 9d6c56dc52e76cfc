"""The visitor's language (Flask-Babel): English, German, Spanish, French, Italian,
Portuguese, Dutch, Polish, Japanese and Arabic (written right to left: the page mirrors).

The language is the ``lang`` cookie set by the footer's picker, else the best match of
``Accept-Language``, else English. Catalogues live in ``translations/`` as ``.po``; the
``.mo`` that gettext reads are built, never committed: by the wheel's build step
(``setup.py``) and, in a source checkout, here at app start when missing or older than
their ``.po``. The admin panel stays English.

The strings of the pages' scripts (``static/js/*.js``) travel as a JSON block in
``base.html`` (``js_strings``), translated here like any other.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from babel import Locale, UnknownLocaleError
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import NullTranslations, Translations
from flask import Flask, Response, current_app, has_request_context, request
from flask_babel import (
    Babel,
    force_locale,
    format_datetime,
    get_locale,
    get_translations,
    lazy_gettext,
)
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

log = logging.getLogger(__name__)
PACKAGE = Path(__file__).resolve().parents[1]  # webapp/, where the wheel puts translations/
# Each in its own words, in the picker's order. An entry keeps its emails' language among
# these too (webapp.domain.waitlist.LANGUAGES holds the same codes: the domain has no Babel).
LANGUAGES = {
    "en": "English",
    "de": "Deutsch",
    "es": "Español",
    "fr": "Français",
    "it": "Italiano",
    "pt": "Português",
    "nl": "Nederlands",
    "pl": "Polski",
    "ja": "日本語",
    "ar": "العربية",
}
DEFAULT = "en"
COOKIE = "lang"
COOKIE_MAX_AGE = 365 * 24 * 3600
TRANSLATIONS = "webapp.translations"  # where a request keeps its catalogue (its environ)
_SPOKEN: ContextVar[NullTranslations | None] = ContextVar("webapp.spoken", default=None)
_LOCALE: ContextVar[Locale | None] = ContextVar("webapp.locale", default=None)
CATALOGUES = "webapp.catalogues"  # app.extensions: each language's catalogue, read once


@contextmanager
def speaking(language: str, rendering: bool = True) -> Iterator[None]:
    """The words and formats in ``language`` outside a request (the waiting page's lean
    poll, in an application context): the catalogue looked up once for every word
    (``page_translations``), the locale of this module's formats (``page_locale``);
    ``rendering``: templates are rendered too, so Flask-Babel's locale is forced for
    their filters (a poll answering figures alone costs a tenth less without it)."""
    with force_locale(language) if rendering else nullcontext():
        words = _SPOKEN.set(catalogue(language))
        locale = _LOCALE.set(parsed(language))
        try:
            yield
        finally:
            _LOCALE.reset(locale)
            _SPOKEN.reset(words)


def catalogue(language: str) -> NullTranslations:
    """The app's catalogue of ``language`` (Flask-Babel's, read once per process)."""
    kept: dict[str, NullTranslations] = current_app.extensions.setdefault(CATALOGUES, {})
    found = kept.get(language)
    if found is None:
        with force_locale(language):
            found = kept[language] = get_translations()
    return found


@functools.cache
def parsed(language: str) -> Locale:
    """``language``'s Babel locale (one of LANGUAGES: a few, kept)."""
    return Locale.parse(language)


def page_locale() -> Locale:
    """The locale numbers and durations are written in: the language ``speaking``
    speaks, else the request's."""
    locale = _LOCALE.get() or get_locale()
    return locale if locale is not None else parsed(DEFAULT)


def page_translations() -> NullTranslations:
    """The catalogue of the request's language, looked up once per request. Flask-Babel
    looks it up again for every word (several calls through its context each time):
    on the waiting page's poll, ten words cost a tenth of the request's CPU."""
    spoken = _SPOKEN.get()
    if spoken is not None:
        return spoken
    if not has_request_context():
        return get_translations()  # type: ignore[no-any-return]
    environ = request.environ
    found: NullTranslations | None = environ.get(TRANSLATIONS)
    if found is None:
        found = environ[TRANSLATIONS] = get_translations()
    return found


def _(message: str, **variables: Any) -> str:
    """gettext for the views, typed, as Flask-Babel's (``%(name)s`` filled in)."""
    said = str(page_translations().ugettext(message))
    return said % variables if variables else said


def ngettext(singular: str, plural: str, num: int, **variables: Any) -> str:
    """ngettext for the views, typed; ``%(num)s`` is the count."""
    variables.setdefault("num", num)
    return str(page_translations().ungettext(singular, plural, num)) % variables


def translations_dir() -> Path:
    """Inside the installed package (the wheel ships the compiled catalogues there),
    else beside the package in a source checkout."""
    packaged = PACKAGE / "translations"
    return packaged if packaged.is_dir() else PACKAGE.parent / "translations"


def compile_catalogues(directory: Path) -> list[Path]:
    """Writes each ``.mo`` that is missing or older than its ``.po``; returns those
    written. Written aside and renamed into place: a racing worker reads a whole file."""
    written = []
    for po in sorted(directory.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as source:
            catalog = read_po(source, locale=po.parts[-3])
        draft = mo.with_name(f".{mo.name}.{os.getpid()}")
        try:
            with draft.open("wb") as out:
                write_mo(out, catalog)
            os.replace(draft, mo)
        except OSError as error:  # a read-only install keeps what it shipped
            log.warning("could not compile %s: %s", po, error)
            continue
        written.append(mo)
    return written


@functools.cache
def translations_for(lang: str) -> NullTranslations:
    """The catalogue of ``lang`` outside a request (the mailer); English if we lack it."""
    chosen = lang if lang in LANGUAGES else DEFAULT
    return Translations.load(str(translations_dir()), [chosen])


@functools.cache
def mail_templates(folder: str, lang: str) -> Environment:
    """Templates outside Flask (the mailer's), with ``_()`` and ``ngettext()`` in
    ``lang``; a language we lack reads English."""
    env = Environment(
        loader=FileSystemLoader(folder),
        autoescape=select_autoescape(["html"]),
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(translations_for(lang), newstyle=True)  # type: ignore[attr-defined]
    return env


def select_language() -> str:
    """The page's language (the picker's choice, else Accept-Language's best match),
    with the browser's region when it asks for one of that language (en_GB): the
    words come from the language's catalogue, times and numbers as that region writes
    them (19:09 in Britain, 7:09 PM in the US)."""
    if request.path.startswith("/admin"):  # the panel stays English, whatever is chosen
        return DEFAULT
    return choose_language(
        request.cookies.get(COOKIE, ""), request.headers.get("Accept-Language", "")
    )


@functools.lru_cache(maxsize=1024)
def choose_language(chosen: str, accept: str) -> str:
    """The language of a visitor's page from the ``lang`` cookie and the
    ``Accept-Language`` header (``select_language``; the waiting page's lean poll asks
    it too, outside Flask). Browsers send a few distinct headers, so each is parsed once
    per process."""
    accepted = parse_accept_header(accept, LanguageAccept)
    if chosen not in LANGUAGES:
        chosen = accepted.best_match(LANGUAGES, default=DEFAULT) or DEFAULT
    return regional(chosen, accepted)


def regional(language: str, accepted: LanguageAccept) -> str:
    """``language`` with the region of the browser's first regional tag of it, if any."""
    for tag, _quality in accepted:
        try:
            locale = Locale.parse(tag, sep="-")
        except (ValueError, TypeError, UnknownLocaleError):
            continue
        if locale.language == language and locale.territory:
            return f"{language}_{locale.territory}"
    return language


def current_language() -> str:
    return page_locale().language


def direction(language: str) -> str:
    """``rtl`` for a language written right to left (Arabic), else ``ltr``: the value of
    ``<html dir>``, for the pages and the emails."""
    try:
        return "rtl" if Locale.parse(language).text_direction == "rtl" else "ltr"
    except (ValueError, TypeError, UnknownLocaleError):
        return "ltr"


def text_direction() -> str:
    """The page's writing direction, for ``<html dir>``."""
    return direction(current_language())


def clock_locale() -> str:
    """The visitor's locale as a BCP 47 tag ("en-GB"): the scripts write clock times,
    dates and numbers with it, as the server does. Babel writes Latin digits in every
    locale, so a locale whose browsers would write others (Arabic's ٣) asks for Latin
    ones too (``ar-u-nu-latn``): one page, one set of digits."""
    locale = get_locale()
    if locale is None:
        return DEFAULT
    tag = str(locale).replace("_", "-")
    return tag if locale.default_numbering_system == "latn" else f"{tag}-u-nu-latn"


def js_strings() -> dict[str, str]:
    """The strings of the pages' scripts (static/js) in the visitor's language. ``%(name)s`` marks a
    value the script fills in; a plural is one key per plural category of the language
    (``_one``, ``_few``, ``_many``, ``_other``...: Unicode's names, which the browser's
    ``Intl.PluralRules`` gives the script), each the catalogue's form for a number of
    that category."""
    strings = {key: str(message) for key, message in JS_STRINGS.items()}
    translations = get_translations()  # its ngettext leaves %(num)s for the script
    for category, n in plural_samples(current_language()).items():
        for key, (one, other) in JS_PLURALS.items():
            strings[f"{key}_{category}"] = str(translations.ngettext(one, other, n))
    return strings


@functools.cache
def plural_samples(language: str) -> dict[str, int]:
    """One whole number of each plural category the language has ("one": 1, "few": 2,
    "many": 5, "other": 0 in Polish); a category no whole number up to 1000 falls in is
    left out (the script reads ``_other`` then)."""
    rule = Locale.parse(language).plural_form
    samples: dict[str, int] = {}
    for n in range(1001):
        samples.setdefault(rule(n), n)
    samples.setdefault("other", 2)
    return samples


def when(at: float) -> str:
    """A Unix time as the visitor's locale writes a date and time (in UTC)."""
    return str(format_datetime(datetime.fromtimestamp(at, UTC), "medium"))


def named_room(room: str) -> Markup:
    """A room's name as it is set inside a translated sentence (``%(room)s``)."""
    return Markup('<span class="room-name">{}</span>').format(room)


def init_app(app: Flask) -> None:
    directory = translations_dir()
    compile_catalogues(directory)
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(directory))
    app.config.setdefault("BABEL_DEFAULT_LOCALE", DEFAULT)
    Babel(app, locale_selector=select_language)
    # the templates' words through the request's catalogue, looked up once (above)
    app.jinja_env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=lambda s: page_translations().ugettext(s),
        ngettext=lambda s, p, n: page_translations().ungettext(s, p, n),
        newstyle=True,
        pgettext=lambda c, s: page_translations().upgettext(c, s),
        npgettext=lambda c, s, p, n: page_translations().unpgettext(c, s, p, n),
    )
    app.jinja_env.filters["when"] = when
    app.jinja_env.filters["named_room"] = named_room

    @app.context_processor
    def language_context() -> dict[str, Any]:
        return {
            "languages": LANGUAGES,
            "current_language": current_language,
            "clock_locale": clock_locale,
            "text_direction": text_direction,
            "js_strings": js_strings,
        }

    @app.after_request
    def vary_on_language(response: Response) -> Response:
        if response.mimetype == "text/html":
            response.vary.add("Accept-Language")
        return response


# The scripts' words (static/js/*.js read them through page.t("key") and page.tn("key", n)).
JS_STRINGS = {
    # the waiting page
    "inLine": lazy_gettext("Number %(position)s in line · %(room)s"),
    "inDraw": lazy_gettext("Waiting for a draw · %(room)s"),  # random order: no place
    "updatedNow": lazy_gettext("Updated just now"),
    "updatedAgo": lazy_gettext("Updated %(n)s s ago"),
    "updatedMinutes": lazy_gettext("Updated %(n)s min ago"),
    "lost": lazy_gettext("Connection lost, trying again… (updated %(age)s)"),
    "lostSaid": lazy_gettext("Connection lost. This page keeps trying to check in for you."),
    "justNow": lazy_gettext("just now"),
    "secondsAgo": lazy_gettext("%(n)s s ago"),
    "minutesAgo": lazy_gettext("%(n)s min ago"),
    "around": lazy_gettext(" (around %(time)s your time)"),
    # a drop's countdown beside its time (static/js/drop.js): "4:24 PM (in 2:47)"
    "countdown": lazy_gettext(" (in %(time)s)"),
    "turnTitle": lazy_gettext("It's your turn! · %(room)s"),
    "turnGo": lazy_gettext("Taking you in… %(n)s"),
    "turnHidden": lazy_gettext("Come back to this tab to go in."),
    "turnNotify": lazy_gettext("It's your turn"),
    "turnNotifyBody": lazy_gettext("A seat in %(room)s is free for you."),
    "endedTitle": lazy_gettext("Your place has ended · %(room)s"),
    "seatEndedTitle": lazy_gettext("Your seat has ended · %(room)s"),
    # the "line is too long" page (static/js/retry.js)
    "retrying": lazy_gettext("Trying again now…"),
    "tryNow": lazy_gettext("Try again now"),
    # the room page
    "title_your_turn": lazy_gettext("It is your turn! · %(room)s"),
    "your_turn": lazy_gettext("It is your turn"),
    "your_turn_body": lazy_gettext("You are in %(room)s now."),
    "something_wrong": lazy_gettext("something went wrong"),
    "you": lazy_gettext("you"),
    "you_marker": lazy_gettext(" (you)"),
    "new_divider": lazy_gettext("New"),
    "chat_restarted": lazy_gettext("The chat started over."),
    "chat_not_connected": lazy_gettext("The chat is not connected: %(reason)s"),
    "too_many_connections": lazy_gettext("too many open connections"),
    "chat_closed": lazy_gettext("The chat is closed: you are no longer in this room."),
    "empty_message": lazy_gettext("An empty message cannot be sent."),
    "message_too_long": lazy_gettext(
        "A message can be at most %(max)s characters; this one has %(count)s."
    ),
    "over_by": lazy_gettext("(%(count)s too many)"),
    "too_fast": lazy_gettext(
        "You are sending too fast: at most %(count)s messages every %(seconds)s seconds;"
        " try again in %(wait)s s."
    ),
    "not_connected_kept": lazy_gettext(
        "Not connected right now; your message is still in the box. "
        "Send it again once the page says Live."
    ),
    "disconnected": lazy_gettext("Disconnected"),
    "seat_ended": lazy_gettext("Your seat has ended: %(reason)s."),
    "join_again": lazy_gettext("Join again"),
    "back_to_lobby": lazy_gettext("Back to the lobby"),
    "not_connected": lazy_gettext("Not connected"),
    "could_not_connect": lazy_gettext(
        "This page could not connect: %(reason)s. Reload the page to try again."
    ),
    "live": lazy_gettext("Live"),
    "reconnecting": lazy_gettext("Reconnecting…"),
    "reconnecting_away": lazy_gettext("Reconnecting (briefly unavailable)…"),
    "copied": lazy_gettext("Copied to the clipboard."),
    "copy_by_hand": lazy_gettext("Select the link and copy it."),
}
# Marked for extraction with ngettext below; read back through the catalogue above.
JS_PLURALS = {
    "retryIn": ("Trying again in %(num)s second.", "Trying again in %(num)s seconds."),
    "new_messages": ("%(num)s new message", "%(num)s new messages"),
    "missed": (
        "%(num)s earlier message is no longer available.",
        "%(num)s earlier messages are no longer available.",
    ),
}
if TYPE_CHECKING:  # never run: only shows pybabel the plural pairs above
    ngettext("Trying again in %(num)s second.", "Trying again in %(num)s seconds.", 1)
    ngettext("%(num)s new message", "%(num)s new messages", 1)
    ngettext(
        "%(num)s earlier message is no longer available.",
        "%(num)s earlier messages are no longer available.",
        1,
    )


def gone_reason(why: str) -> str:
    """Why a place or seat ended, as the end of a sentence."""
    reasons = {
        "left": _("you left"),
        "removed": _("an admin removed you"),
        "dropped": _("you missed your check-ins and dropped out of the line"),
        "unclaimed": _("the seat offered to you was not claimed in time"),
        "grace": _("you were away longer than the grace period"),
        "session": _("you did not check in for too long"),
        "sold_out": _("it sold out before your turn"),
        "event_ended": _("the event has ended"),
    }
    return reasons.get(why, why)
