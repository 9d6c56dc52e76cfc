"""The mailer (issue 13, phase 2a): a worker process that sends each room's outbox by
SMTP, ``python -m webapp.workers.mailer`` (the Procfile's ``worker:`` line). No Flask.

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

import logging
import os
import signal
import smtplib
import socket
import threading
import time
from collections.abc import Callable
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path

import redis
from babel.dates import format_timedelta
from jinja2 import Environment

from webapp import config
from webapp.domain.claims import (
    claim_url,
    confirm_url,
    entry_url,
    sign_claim,
    sign_confirm,
    sign_entry,
)
from webapp.domain.clock import Clock, clock_of
from webapp.domain.mail import MailHealth, MailSettings, SmtpHealth, idempotency_key, message_id
from webapp.domain.rooms import WaitingRooms
from webapp.domain.settings import RoomSettings
from webapp.infra import logs
from webapp.redis.replies import record
from webapp.redis.replies import text as _text
from webapp.redis.replies import texts as _fields
from webapp.web.i18n import (
    DEFAULT,
    LANGUAGES,
    compile_catalogues,
    direction,
    mail_templates,
    translations_dir,
    translations_for,
)

log = logging.getLogger("webapp.workers.mailer")
GROUP = "mailer"
PACKAGE = Path(__file__).resolve().parents[1]  # webapp/, where the wheel puts templates/
PROBE_TIMEOUT = 10.0  # seconds the SMTP server has to answer a check
CHECK_DOWN = 5.0  # seconds between checks while the SMTP server does not answer
# `make run` starts the mailer and gunicorn at once, and gunicorn starts the embedded
# Redis: not answering for this long at start is news; a few seconds are not.
REDIS_START = 30.0
# An offered seat's email waits this long: an open page takes its seat within seconds
# (its next poll, then the moment "it's your turn" shows), and its visitor needs no email
OFFER_EMAIL_AFTER = 15.0
# A send that failed for one of these says the server is away, not that one message is bad
UNREACHABLE = (OSError, smtplib.SMTPConnectError, smtplib.SMTPServerDisconnected,
               smtplib.SMTPAuthenticationError)  # fmt: skip


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
    "link": N_("Your link to the waitlist of %(room)s"),
    "sold_out": N_("Sold out: %(room)s"),  # a drop's (drop_lib.lua end_waiting)
    "event_ended": N_("%(room)s has ended"),
}


def _templates(lang: str) -> Environment:
    """The email templates, speaking ``lang`` (the entry's language; English if unknown)."""
    folder = PACKAGE / "templates"
    return mail_templates(str(folder if folder.is_dir() else PACKAGE.parent / "templates"), lang)


class Mailer:
    """Sends every room's outbox. One per worker process; ``worker`` names it."""

    def __init__(
        self,
        rooms: WaitingRooms,
        health: MailHealth,
        settings: MailSettings,
        worker: str = "",
        clock: Clock | Callable[[], float] | None = None,
    ) -> None:
        self.rooms = rooms
        self.client = rooms.client
        self.keys = rooms.keys
        self.scripts = rooms.scripts
        self.health = health
        self.settings = settings
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}"
        self.clock = clock_of(clock)
        self._groups: set[str] = set()
        self._smtp: SmtpHealth | None = None  # the last check of the SMTP server
        self._redis: bool | None = None  # Redis answered last time (None: never yet)
        self._started = time.monotonic()
        self._said_waiting = False  # that Redis does not answer at start, said once
        self._said_ready = False

    def run(self, stop: threading.Event) -> None:
        """Rounds until ``stop``: the SMTP server checked every ``check`` seconds (every
        few while it does not answer, when nothing is sent: the outbox keeps it all), and
        each round over every room's outbox. A Redis or SMTP outage is said once."""
        next_check = 0.0
        while not stop.is_set():
            busy = 0
            try:
                if not self._redis:  # first whether Redis answers, then the SMTP server
                    self.client.ping()
                    self._redis_is(up=True)
                if time.monotonic() >= next_check:
                    ok = self.check_smtp().ok
                    next_check = time.monotonic() + (self.settings.check if ok else CHECK_DOWN)
                if self._smtp is not None and self._smtp.ok:
                    busy = self.run_once()
                self._redis_is(up=True)
            except (redis.ConnectionError, redis.TimeoutError) as error:  # not up, or frozen
                self._redis_is(up=False, error=error)
            except Exception:  # a bug in one message: log, go on
                log.exception("mailer round failed")
            if not busy:
                stop.wait(self.settings.poll)

    def check_smtp(self) -> SmtpHealth:
        """Whether the SMTP server answers (and takes the login): recorded for the pages
        and the panel, and said in the log when it changes."""
        s = self.settings
        try:
            with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=PROBE_TIMEOUT) as smtp:
                self._hello(smtp)
                smtp.noop()
            error = ""
        except (smtplib.SMTPException, OSError) as failure:
            error = _failure(failure)
        return self._smtp_is(error)

    def _smtp_is(self, error: str) -> SmtpHealth:
        s, before = self.settings, self._smtp
        health = SmtpHealth(not error, s.server, error, self.clock())
        self.health.record(health, ttl=3 * s.check)
        self._smtp = health
        if error and (before is None or before.ok):
            log.warning(
                "Mail cannot be sent: no SMTP server answers at %s (%s). Emails wait in "
                "the outbox until one does; set WEBAPP_SMTP_HOST and WEBAPP_SMTP_PORT "
                '(README, "Email").',
                s.server,
                error,
            )
        elif not error and (before is None or not before.ok):
            log.info("sending mail through the SMTP server at %s", s.server)
        return health

    def _redis_is(self, up: bool, error: Exception | None = None) -> None:
        """Says a change once, in words: ready (the first time Redis answers), Redis
        gone, Redis back. Not answering at start is normal for a while (``make run``
        starts the mailer and the app at once): said only past ``REDIS_START``."""
        waited = time.monotonic() - self._started
        if up and not self._said_ready:
            self._said_ready = True
            log.info(
                "ready: it sends the rooms' emails, with links to %s", self.settings.public_url
            )
        elif up and self._redis is False:
            log.info("the app's Redis answers again; the emails that waited go out now")
        elif not up and self._redis:
            log.warning("lost the app's Redis (%s); emails wait until it answers", error)
        elif not up and not self._said_ready and not self._said_waiting and waited > REDIS_START:
            self._said_waiting = True
            log.warning(
                "the app's Redis does not answer after %.0f s (%s); emails wait until it "
                "does (is the app running, with the same REDIS_URL or WEBAPP_DATA_DIR?)",
                waited,
                error,
            )
        self._redis = up

    def run_once(self) -> int:
        """One round over every room; returns how many messages it handled. Whatever one
        room's stream does, the rooms after it are still served (only a lost Redis ends
        the round)."""
        handled = 0
        for room in self.rooms.names():
            try:
                handled += self._room(room)
            except (redis.ConnectionError, redis.TimeoutError):
                raise
            except Exception:
                log.exception("mailer: room %s skipped this round", room)
        return handled

    def _room(self, room: str) -> int:
        try:
            return self._outbox(room)
        except redis.ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            # The outbox went with the group we remembered (its room deleted and made
            # again under the same name, or it expired idle) and was written again
            self._groups.discard(self.keys.waitlist(room).outbox)
            return self._outbox(room)

    def _outbox(self, room: str) -> int:
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
        if kind == "offered" and float(fields.get("at") or 0) + OFFER_EMAIL_AFTER > self.clock():
            return 0  # still pending: read again at a later round
        key = idempotency_key(room, entry, notice)
        field = f"{entry}:{notice}"
        deliveries = self.keys.deliveries(room)
        s = self.settings
        mid = message_id(key, s.mail_from)
        now = self.clock()
        state, attempt = self.scripts["mail_claim"](
            keys={"deliveries": deliveries}, args=[field, self.worker, now, s.lease, mid]
        )
        state = _text(state)
        if state in ("sent", "failed", "skipped"):  # done before: acknowledge only
            self.client.xack(outbox, GROUP, stream_id)
            return 1
        if state != "go":
            return 0
        if kind == "offered" and not self._still_offered(room, entry):
            why = "not sent: the seat was taken by an open page, or the offer ended, first"
            self._done(room, field, "skipped", 0, why, stream_id)
            return 1
        try:
            self._send(compose(self.rooms, s, room, fields, key, mid, now))
        except (smtplib.SMTPException, OSError) as error:
            final = int(attempt) >= s.attempts
            later = now + s.backoff * 2 ** (int(attempt) - 1)
            self._done(room, field, "failed" if final else "retry", later, str(error), stream_id)
            log.warning("sending %s failed (try %s): %s", key, attempt, error)
            if isinstance(error, UNREACHABLE):
                self._smtp_is(_failure(error))
            return 1
        self._done(room, field, "sent", 0, "", stream_id)
        return 1

    def _still_offered(self, room: str, token: str) -> bool:
        """Whether the live room's seat is still offered to ``token`` (not taken yet)."""
        raw = self.client.hget(self.keys.room(room).tickets, token)
        return raw is not None and record(raw).get("st") == "offered"

    def _done(
        self, room: str, field: str, state: str, later: float, error: str, stream_id: str
    ) -> None:
        keys = {"deliveries": self.keys.deliveries(room), "outbox": self.keys.room(room).outbox}
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

    def _send(self, message: EmailMessage) -> None:
        s = self.settings
        with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=30) as smtp:
            self._hello(smtp)
            smtp.send_message(message)

    def _hello(self, smtp: smtplib.SMTP) -> None:
        s = self.settings
        if s.smtp_starttls:
            smtp.starttls()
        if s.smtp_username:
            smtp.login(s.smtp_username, s.smtp_password)


def compose(
    rooms: WaitingRooms,
    s: MailSettings,
    room: str,
    fields: dict[str, str],
    key: str,
    mid: str,
    now: float,
) -> EmailMessage:
    """The email of one outbox message, in the entry's language, text and HTML."""
    kind, entry = fields.get("kind", "admitted"), fields["entry"]
    lang = fields.get("lang", "") if fields.get("lang") in LANGUAGES else DEFAULT
    settings = rooms.find_settings(room) or RoomSettings()
    title = settings.title or room  # what people read: the title, the address without one
    context: dict[str, object] = {
        "room": title,
        "name": fields.get("name", ""),
        "lang": lang,
        "dir": direction(lang),  # Arabic's HTML part reads right to left
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
            until = admitted + settings.claim_seconds
        token = sign_claim(s.secret, room, entry, until, 0, kind)
        context["link"] = claim_url(s.public_url, token)
        # "2 hours", "2 Stunden", "2 horas": Babel writes the window in the language
        context["window"] = format_timedelta(round(until - admitted), locale=lang)
    elif kind in ("sold_out", "event_ended"):  # a drop's end of every waiting place
        context["link"] = f"{s.public_url.rstrip('/')}/rooms/{room}"
    elif kind == "confirm":
        context["link"] = confirm_url(
            s.public_url, sign_confirm(s.secret, room, entry, fields["email"])
        )
    message = EmailMessage()
    subject = translations_for(lang).gettext(SUBJECTS.get(kind, "%(room)s"))
    message["Subject"] = subject % {"room": title}
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


def _failure(error: BaseException) -> str:
    """Why a connection to the SMTP server failed, in a few words."""
    if isinstance(error, socket.timeout | TimeoutError):
        return f"no answer within {PROBE_TIMEOUT:g} s"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror  # "Connection refused", without the "[Errno 111]"
    return str(error) or type(error).__name__


def main() -> None:
    """``python -m webapp.workers.mailer``: the app's settings, read and resolved as the app's
    workers do (the same data directory, secret and Redis: it waits for the app's
    embedded Redis rather than start its own), and its services built the same way."""
    from webapp.services import build

    logs.configure("mailer")
    settings = config.settings()
    config.resolve(settings, start_redis=False)
    services = build(settings)
    compile_catalogues(translations_dir())  # a checkout's .mo, if the app has not yet
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    mail = MailSettings.from_config(settings)
    if not os.environ.get("WEBAPP_PUBLIC_URL"):  # `make run` sets it to its own address
        log.warning(
            "WEBAPP_PUBLIC_URL is not set: the links in emails open %s, the default. Set "
            'it to the address people reach the app at (README, "Email").',
            mail.public_url,
        )
    Mailer(services.rooms, services.mail, mail, clock=services.clock).run(stop)


if __name__ == "__main__":
    main()
