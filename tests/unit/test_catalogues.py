"""The message catalogues: complete in every language, and in step with the sources."""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from gettext import c2py
from pathlib import Path

import pytest
from babel import Locale
from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from webapp.domain import waitlist
from webapp.web.i18n import LANGUAGES, compile_catalogues

ROOT = Path(__file__).resolve().parents[2]
# Every catalogue there is, whether or not LANGUAGES offers it yet
TRANSLATED = sorted(po.parts[-3] for po in ROOT.glob("translations/*/LC_MESSAGES/messages.po"))
# How many forms a plural has in each language: Polish counts one, few and many; Arabic
# zero, one, two, few, many and other; Japanese does not inflect
PLURAL_FORMS = {"de": 2, "es": 2, "fr": 2, "it": 2, "pt": 2, "nl": 2, "pl": 3, "ja": 1, "ar": 6}
PLACEHOLDER = re.compile(r"%\((\w+)\)s")


@functools.cache  # read once per run (the tests only read it)
def catalogue(lang: str) -> Catalog:
    with (ROOT / "translations" / lang / "LC_MESSAGES" / "messages.po").open("rb") as po:
        return read_po(po, locale=lang)


@functools.cache  # one extraction for every language
def extracted() -> set[str]:
    """The msgids of the current sources, as `make messages` extracts them."""
    with (ROOT / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    keywords = {**DEFAULT_KEYWORDS, "lazy_gettext": None}
    found = extract_from_dir(str(ROOT), method_map, options_map, keywords=keywords)
    return {msgid if isinstance(msgid, str) else msgid[0] for _, _, msgid, *_ in found}


def singular(msgid: str | tuple[str, ...]) -> str:
    return msgid if isinstance(msgid, str) else msgid[0]


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_message_is_translated(lang):
    """Every msgid has a translation in every form, none fuzzy, with the same placeholders."""
    untranslated, fuzzy = [], []
    for message in catalogue(lang):
        if not message.id:
            continue
        if not all(forms(message)) or len(forms(message)) != (
            catalogue(lang).num_plurals if isinstance(message.id, tuple) else 1
        ):
            untranslated.append(singular(message.id))
        if message.fuzzy:
            fuzzy.append(singular(message.id))
    assert not untranslated, f"{lang}: no translation for {untranslated}"
    assert not fuzzy, f"{lang}: fuzzy translations {fuzzy}"
    problems = [(singular(m.id), [str(e) for e in errors]) for m, errors in catalogue(lang).check()]
    assert not problems, f"{lang}: {problems}"


def test_every_catalogue_is_offered_and_every_offer_has_a_catalogue():
    """The picker, Accept-Language and the emails offer exactly the languages translated."""
    assert set(TRANSLATED) == set(LANGUAGES) - {"en"}
    assert set(waitlist.LANGUAGES) == set(LANGUAGES)
    assert set(PLURAL_FORMS) == set(TRANSLATED)


@pytest.mark.parametrize("lang", TRANSLATED)
def test_plural_forms_follow_the_language(lang):
    """The header counts the language's forms, and each form is one of its plural categories
    (Unicode's, which the scripts' Intl.PluralRules use) for every number up to 1000."""
    cat = catalogue(lang)
    assert cat.num_plurals == PLURAL_FORMS[lang]
    rule, category = c2py(cat.plural_expr), Locale.parse(lang).plural_form
    form_of = {}
    for n in range(1001):
        assert form_of.setdefault(category(n), rule(n)) == rule(n), f"{lang}: {n}"
    assert sorted(set(form_of.values())) == list(range(cat.num_plurals))


def forms(message: Message) -> tuple[str, ...]:
    return message.string if isinstance(message.string, tuple) else (message.string,)


@pytest.mark.parametrize("lang", TRANSLATED)
def test_translations_keep_every_placeholder(lang):
    """Every form names the msgid's placeholders, no more and no fewer; only a form a single
    number selects ("one" in Polish, "two" in Arabic) may leave the number out."""
    cat = catalogue(lang)
    hits = Counter(c2py(cat.plural_expr)(n) for n in range(1000))
    wrong = []
    for message in cat:
        if not message.id:
            continue
        plural = isinstance(message.id, tuple)
        wanted = set(PLACEHOLDER.findall(message.id[1] if plural else message.id))
        for index, text in enumerate(forms(message)):
            spare = {"num", "count"} if plural and hits[index] == 1 else set()
            if not wanted - spare <= set(PLACEHOLDER.findall(text)) <= wanted:
                wrong.append((singular(message.id), index, text))
    assert not wrong, f"{lang}: {wrong}"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_catalogues_hold_every_string_of_the_sources(lang):
    """A new English string without a translation fails here: run `make messages`."""
    sources = extracted()
    assert len(sources) > 50  # the extraction itself works
    missing = sources - {singular(m.id) for m in catalogue(lang) if m.id}
    assert not missing, f"{lang}: not in the catalogue (run `make messages`): {sorted(missing)}"


def test_catalogues_compile_when_missing_or_stale(tmp_path):
    """A .mo is written beside a .po that has none or a newer one, and left alone otherwise."""
    folder = tmp_path / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    po = folder / "messages.po"
    po.write_bytes((ROOT / "translations/de/LC_MESSAGES/messages.po").read_bytes())
    assert compile_catalogues(tmp_path) == [folder / "messages.mo"]
    assert compile_catalogues(tmp_path) == []
    mo = folder / "messages.mo"
    stamp = mo.stat().st_mtime
    os.utime(po, (stamp + 10, stamp + 10))
    assert compile_catalogues(tmp_path) == [mo]
