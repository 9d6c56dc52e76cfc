"""The mailer (issue 13, phase 2a): a worker process that sends each room's outbox by
SMTP, ``python -m webapp.mailer`` (the Procfile's ``worker:`` line). No Flask.

Each room's outbox stream (written by the admission script itself) is read through the
consumer group ``mailer``, so several workers share the work and a message a worker
took and never acknowledged (it died) is taken over with XAUTOCLAIM after the lease.

Every notice has an idempotency key, ``<room>:<entry>:<kind>``, and a delivery record in
the room's ``mail`` hash (``Keys.deliveries``), which the panel can show:

1. ``mail_claim.lua`` sets the record to ``sending`` (this worker, a lease), unless it is
   ``sent`` already or another worker's lease still runs.
2. SMTP, with a Message-ID made from the idempotency key.
3. ``mail_done.lua`` sets ``sent`` and acknowledges the message in one script, so no
   notice marked sent is ever sent again, and none is acknowledged unsent. A refused or
   failed send is ``retry`` with an exponential backoff, ``failed`` after the last try.

The window that cannot be closed without a transactional mail server: killed after the
server accepted the message (its 250 to DATA) and before step 3. The record stays
``sending``; when its lease ends another worker sends again, with the same Message-ID,
so the duplicate is recognisable (and dropped by servers that deduplicate on it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import smtplib
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Any

import redis
from babel.dates import format_timedelta
from jinja2 import Environment

from webapp.domain.claims import (
    DEFAULT_CLAIM_SECONDS,
    claim_url,
    confirm_url,
    entry_url,
    sign_claim,
    sign_confirm,
    sign_entry,
)
from webapp.domain.rooms import WaitingRooms
from webapp.i18n import (
    DEFAULT,
    LANGUAGES,
    compile_catalogues,
    mail_templates,
    translations_dir,
    translations_for,
)
from webapp.redis.connection import connect
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts

log = logging.getLogger("webapp.mailer")
GROUP = "mailer"
HERE = Path(__file__).resolve().parent


def N_(message: str) -> str:
    """Marks a message for the catalogues (pybabel); it is translated when sent."""
    return message


# Every kind of notice a room's outbox carries, with its subject; each has a text and an
# HTML template, templates/email/<kind>.txt and .html. All in the entry's language.
SUBJECTS = {
    "confirm": N_("Confirm your email for %(room)s"),
    "admitted": N_("You're in: %(room)s"),
    "lapsed": N_("Your place in %(room)s has lapsed"),
    "near": N_("You are nearly in: %(room)s"),
    "offered": N_("A seat is free for you: %(room)s"),
}


@dataclass(frozen=True)
class MailSettings:
    secret: str
    public_url: str = "http://127.0.0.1:8000"
    mail_from: str = "waiting-room@localhost"
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 25
    smtp_username: str = ""
    smtp_password: str = ""
    smtp_starttls: bool = False
    claim_seconds: float = DEFAULT_CLAIM_SECONDS  # a room without a claim_seconds setting
    lease: float = 60.0  # seconds a 'sending' marker holds a notice for its worker
    attempts: int = 8  # tries before a notice is 'failed'
    backoff: float = 5.0  # seconds before the second try; doubles each time
    poll: float = 1.0  # seconds between rounds when there was nothing to send


def _secret(env: Mapping[str, str]) -> str:
    secret = env.get("WEBAPP_SECRET_KEY")
    if secret:
        return secret
    # The app keeps a random key there when none is set (one host)
    return (Path(env.get("WEBAPP_DATA_DIR", "var")) / "secret_key").read_text().strip()


def settings_from_env(env: Mapping[str, str]) -> MailSettings:
    def number(name: str, default: float) -> float:
        return float(env.get(f"WEBAPP_{name}", default))

    return MailSettings(
        secret=_secret(env),
        public_url=env.get("WEBAPP_PUBLIC_URL", MailSettings.public_url),
        mail_from=env.get("WEBAPP_MAIL_FROM", MailSettings.mail_from),
        smtp_host=env.get("WEBAPP_SMTP_HOST", MailSettings.smtp_host),
        smtp_port=int(number("SMTP_PORT", MailSettings.smtp_port)),
        smtp_username=env.get("WEBAPP_SMTP_USERNAME", ""),
        smtp_password=env.get("WEBAPP_SMTP_PASSWORD", ""),
        smtp_starttls=env.get("WEBAPP_SMTP_STARTTLS", "").lower() in ("1", "true", "yes"),
        lease=number("MAIL_LEASE_SECONDS", MailSettings.lease),
        poll=number("MAIL_POLL_SECONDS", MailSettings.poll),
    )


def idempotency_key(room: str, entry: str, kind: str) -> str:
    return f"{room}:{entry}:{kind}"


def message_id(key: str, mail_from: str) -> str:
    """The same Message-ID for every try of one notice, so a duplicate is recognisable."""
    domain = mail_from.rpartition("@")[2] or "localhost"
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@{domain}>"


def _templates(lang: str) -> Environment:
    """The email templates, speaking ``lang`` (the entry's language; English if unknown)."""
    folder = HERE / "templates"
    return mail_templates(str(folder if folder.is_dir() else HERE.parent / "templates"), lang)


class Mailer:
    """Sends every room's outbox. One per worker process; ``worker`` names it."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        settings: MailSettings,
        worker: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.keys = keys
        self.rooms = WaitingRooms(client, keys)
        self.scripts = Scripts(client)
        self.settings = settings
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}"
        self.clock = clock
        self._groups: set[str] = set()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                busy = self.run_once()
            except redis.ConnectionError as error:  # not up yet, or restarting
                log.warning("Redis unavailable: %s", error)
                busy = 0
            except Exception:  # a bug in one message: log, go on
                log.exception("mailer round failed")
                busy = 0
            if not busy:
                stop.wait(self.settings.poll)

    def run_once(self) -> int:
        """One round over every room; returns how many messages it handled."""
        return sum(self._room(room) for room in self.rooms.names())

    def _room(self, room: str) -> int:
        outbox = self.keys.waitlist(room).outbox
        if outbox not in self._groups:
            if not self.client.exists(outbox):
                return 0
            try:
                self.client.xgroup_create(outbox, GROUP, id="0")
            except Exception as error:  # BUSYGROUP: another worker made it
                if "BUSYGROUP" not in str(error):
                    raise
            self._groups.add(outbox)
        idle = int(self.settings.lease * 1000)
        # Another worker's messages, unacknowledged for longer than a lease (it died)
        _, taken, *_ = self.client.xautoclaim(outbox, GROUP, self.worker, idle, "0-0", count=50)
        messages = list(taken)
        # Our own pending ones (a retry waiting for its backoff, or from before a restart)
        for _, batch in self.client.xreadgroup(GROUP, self.worker, {outbox: "0"}, count=50):
            messages.extend(batch)
        for _, batch in self.client.xreadgroup(GROUP, self.worker, {outbox: ">"}, count=50):
            messages.extend(batch)
        handled = 0
        for stream_id, fields in messages:
            if fields:  # a message trimmed away comes back empty
                handled += self._deliver(room, outbox, _text(stream_id), _fields(fields))
        return handled

    def _deliver(self, room: str, outbox: str, stream_id: str, fields: dict[str, str]) -> int:
        entry, kind = fields["entry"], fields.get("kind", "admitted")
        # A notice sent again on purpose (the 2nd confirmation) is a notice of its own
        nth = fields.get("nth", "1")
        notice = kind if nth == "1" else f"{kind}-{nth}"
        key = idempotency_key(room, entry, notice)
        field = f"{entry}:{notice}"
        deliveries = self.keys.deliveries(room)
        mid = message_id(key, self.settings.mail_from)
        now = self.clock()
        state, attempt = self.scripts["mail_claim"](
            keys=[deliveries], args=[field, self.worker, now, self.settings.lease, mid]
        )
        state = _text(state)
        if state in ("sent", "failed"):  # done before: acknowledge only
            self.client.xack(outbox, GROUP, stream_id)
            return 1
        if state != "go":
            return 0
        try:
            self._send(self._message(room, fields, key, mid, now))
        except (smtplib.SMTPException, OSError) as error:
            final = int(attempt) >= self.settings.attempts
            later = now + self.settings.backoff * 2 ** (int(attempt) - 1)
            self._done(room, field, "failed" if final else "retry", later, str(error), stream_id)
            log.warning("sending %s failed (try %s): %s", key, attempt, error)
            return 1
        self._done(room, field, "sent", 0, "", stream_id)
        return 1

    def _done(
        self, room: str, field: str, state: str, later: float, error: str, stream_id: str
    ) -> None:
        keys = [self.keys.deliveries(room), self.keys.waitlist(room).outbox]
        args: list[str | float] = [
            field,
            self.worker,
            self.clock(),
            state,
            later,
            error[:200],
            GROUP,
            stream_id,
        ]
        self.scripts["mail_done"](keys=keys, args=args)

    def _message(
        self, room: str, fields: dict[str, str], key: str, mid: str, now: float
    ) -> EmailMessage:
        s = self.settings
        kind, entry = fields.get("kind", "admitted"), fields["entry"]
        lang = fields.get("lang", "") if fields.get("lang") in LANGUAGES else DEFAULT
        context: dict[str, object] = {
            "room": room,
            "name": fields.get("name", ""),
            "lang": lang,
            "entry_link": entry_url(s.public_url, room, sign_entry(s.secret, room, entry)),
        }
        if kind == "offered":
            # A live room's seat, offered until the offer's deadline (room_lib.lua offer)
            at, until = float(fields.get("at") or now), float(fields.get("until") or now)
            token = sign_claim(s.secret, room, entry, until, 0, kind)
            context["link"] = claim_url(s.public_url, token)
            context["window"] = format_timedelta(round(max(until - at, 0)), locale=lang)
        elif kind == "admitted":
            # The window runs from the admission to the deadline the script set (the
            # sweep lapses the entry then), whichever try sends it
            admitted = float(fields.get("at") or now)
            until = float(fields.get("until") or 0)
            if not until:  # a message from before deadlines were kept
                room_settings = self.rooms.settings(room)
                seconds = room_settings.claim_seconds if room_settings else s.claim_seconds
                until = admitted + seconds
            token = sign_claim(s.secret, room, entry, until, 0, kind)
            context["link"] = claim_url(s.public_url, token)
            # "2 hours", "2 Stunden", "2 horas": Babel writes the window in the language
            context["window"] = format_timedelta(round(until - admitted), locale=lang)
        elif kind == "confirm":
            token = sign_confirm(s.secret, room, entry, fields["email"])
            context["link"] = confirm_url(s.public_url, token)
        message = EmailMessage()
        subject = translations_for(lang).gettext(SUBJECTS.get(kind, "%(room)s"))
        message["Subject"] = subject % {"room": room}
        message["From"] = s.mail_from
        message["To"] = fields["email"]
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = mid
        message["X-Idempotency-Key"] = key
        templates = _templates(lang)
        message.set_content(templates.get_template(f"email/{kind}.txt").render(context))
        html = templates.get_template(f"email/{kind}.html").render(context)
        message.add_alternative(html, subtype="html")
        return message

    def _send(self, message: EmailMessage) -> None:
        s = self.settings
        with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=30) as smtp:
            if s.smtp_starttls:
                smtp.starttls()
            if s.smtp_username:
                smtp.login(s.smtp_username, s.smtp_password)
            smtp.send_message(message)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _fields(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in raw.items()}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s mailer %(message)s")
    env = os.environ
    url = (
        env.get("REDIS_URL") or f"unix://{Path(env.get('WEBAPP_DATA_DIR', 'var'))}/redis/redis.sock"
    )
    client = connect(url)
    compile_catalogues(translations_dir())  # a checkout's .mo, if the app has not yet
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    settings = None
    while settings is None and not stop.is_set():
        try:
            settings = settings_from_env(env)
        except FileNotFoundError:  # `make run`: the app has not written its key yet
            stop.wait(1.0)
    if settings is None:
        return
    mailer = Mailer(client, Keys(env.get("WEBAPP_REDIS_PREFIX", "wr")), settings)
    log.info("mailer %s started", mailer.worker)
    mailer.run(stop)


if __name__ == "__main__":
    main()
