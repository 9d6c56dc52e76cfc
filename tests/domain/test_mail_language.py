"""Emails in the entry's language: the page's language at sign-up travels with the entry
to the outbox, and the mailer writes subject, text and HTML in it."""

from __future__ import annotations

import email
import threading
from email.message import Message
from email.policy import default

import pytest
from aiosmtpd.controller import Controller
from babel.dates import format_timedelta
from building import engine, mailer_of
from gunicorn_app import free_port

from webapp.domain.waitlist import Waitlists
from webapp.web.i18n import compile_catalogues, translations_dir

ROOM = "list"


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.messages.append(email.message_from_bytes(envelope.content, policy=default))
        return "250 OK"


@pytest.fixture
def inbox():
    handler = Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield handler, controller.port
    finally:
        controller.stop()


def send(r, keys, clock, port, langs: list[str]) -> None:
    """One entry per language joins, confirms and is admitted; the mailer sends."""
    compile_catalogues(translations_dir())  # as the worker does when it starts
    rooms = engine(r, keys, clock)
    rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": 7200})
    waitlists = Waitlists(rooms, secret=b"s")
    for i, lang in enumerate(langs):
        entry = waitlists.join(ROOM, f"P{i}", f"p{i}@example.org", language=lang)
        waitlists.confirm(ROOM, entry.id)
    rooms.admit(ROOM, len(langs))
    mailer = mailer_of(rooms, port, clock=clock, secret="x")
    while mailer.run_once():
        pass


def parts(message: Message) -> tuple[str, str]:
    text, html = message.get_payload()
    return text.get_payload(decode=True).decode(), html.get_payload(decode=True).decode()


def test_each_entry_is_written_to_in_its_language(r, keys, clock, inbox):
    """German, Spanish, unknown-language, Arabic and Japanese entries get German, Spanish,
    English, Arabic (right to left) and Japanese mail: the confirmation at sign-up and the
    admission, subject, text and HTML."""
    handler, port = inbox
    send(r, keys, clock, port, ["de", "es", "", "ar", "ja"])
    mail = {(m["To"], m["Subject"]): m for m in handler.messages}
    assert len(mail) == len(handler.messages) == 10

    german = mail[("p0@example.org", f"Sie sind dran: {ROOM}")]
    text, html = parts(german)
    assert "Hallo P0," in text and "innerhalb von 2 Stunden" in text
    assert '<html lang="de" dir="ltr">' in html and "Meinen Platz einlösen" in html
    text, _ = parts(mail[("p0@example.org", f"Bestätigen Sie Ihre E-Mail-Adresse für {ROOM}")])
    assert "Bitte bestätigen Sie Ihre E-Mail-Adresse mit diesem Link" in text

    spanish = mail[("p1@example.org", f"Es tu turno: {ROOM}")]
    text, html = parts(spanish)
    assert "Hola, P1:" in text and "en un plazo de 2 horas" in text
    assert '<html lang="es" dir="ltr">' in html
    assert ("p1@example.org", f"Confirma tu correo para {ROOM}") in mail

    english = mail[("p2@example.org", f"You're in: {ROOM}")]
    text, _ = parts(english)
    assert "Hello P2," in text and "within 2 hours" in text
    assert ("p2@example.org", f"Confirm your email for {ROOM}") in mail

    arabic = mail[("p3@example.org", f"لقد دخلت: {ROOM}")]
    text, html = parts(arabic)
    assert "مرحبًا P3،" in text and f"استلمه خلال {format_timedelta(7200, locale='ar')}" in text
    assert '<html lang="ar" dir="rtl">' in html and "استلام مكاني" in html
    assert ("p3@example.org", f"أكِّد بريدك الإلكتروني لـ {ROOM}") in mail

    japanese = mail[("p4@example.org", f"入場しました：{ROOM}")]  # noqa: RUF001 (Japanese colon)
    text, html = parts(japanese)
    assert "P4様" in text and format_timedelta(7200, locale="ja") in text
    assert '<html lang="ja" dir="ltr">' in html
