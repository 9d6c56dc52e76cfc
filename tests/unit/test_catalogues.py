"""The message catalogues: complete in every language, and in step with the sources."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from webapp.web.i18n import LANGUAGES, compile_catalogues

ROOT = Path(__file__).resolve().parents[2]
TRANSLATED = [lang for lang in LANGUAGES if lang != "en"]


def catalogue(lang: str) -> Catalog:
    with (ROOT / "translations" / lang / "LC_MESSAGES" / "messages.po").open("rb") as po:
        return read_po(po, locale=lang)


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
        forms = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(forms):
            untranslated.append(singular(message.id))
        if message.fuzzy:
            fuzzy.append(singular(message.id))
    assert not untranslated, f"{lang}: no translation for {untranslated}"
    assert not fuzzy, f"{lang}: fuzzy translations {fuzzy}"
    problems = [(singular(m.id), [str(e) for e in errors]) for m, errors in catalogue(lang).check()]
    assert not problems, f"{lang}: {problems}"


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
