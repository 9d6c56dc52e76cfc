"""The mailer (issue 13, phase 2a): each admission's notice is sent exactly once, by a
real SMTP server on loopback, also across a killed worker and two workers at once."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import building
import pytest
from itsdangerous import URLSafeSerializer, URLSafeTimedSerializer

from webapp.domain.claims import address_tag, verify_claim
from webapp.domain.mail import MailHealth
from webapp.domain.waitlist import MailFigures, Waitlists
from webapp.workers.mailer import GROUP

ROOM = "list"
SECRET = "mailer test secret"
ROOT = Path(__file__).resolve().parents[2]


def admit(rooms, n):
    """A waitlist of ``n`` confirmed entries, all admitted; their ids."""
    rooms.configure(ROOM, {"kind": "waitlist"})
    waitlists = Waitlists(rooms, secret=b"s")
    ids = []
    for i in range(n):
        entry = waitlists.join(ROOM, f"P{i}", f"p{i}@example.org")
        waitlists.confirm(ROOM, entry.id)
        ids.append(entry.id)
    rooms.client.delete(rooms.keys.waitlist(ROOM).outbox)  # the confirmations: not counted here
    assert len(rooms.admit(ROOM, n).tokens) == n
    return ids


def records(r, keys):
    """The delivery records (the hash's "#" fields are its counts)."""
    raw = r.hgetall(keys.deliveries(ROOM))
    return [json.loads(v) for k, v in raw.items() if not _str(k).startswith("#")]


def _str(value):
    return value.decode() if isinstance(value, bytes) else value


def mailer_of(rooms, port, **options):
    return building.mailer_of(rooms, port, secret=SECRET, **options)


def check_links(messages, ids, clock):
    """Each message carries a valid claim link for its own entry; one per entry."""
    entries = []
    for message in messages:
        text = message.get_payload()[0].get_payload(decode=True).decode()
        link = next(w for w in text.split() if w.startswith("https://w.example/claim/"))
        claim = verify_claim(SECRET, link.rsplit("/", 1)[1], clock())
        assert claim.room == ROOM
        assert message["To"] == f"p{ids.index(claim.entry)}@example.org"
        entries.append(claim.entry)
    assert sorted(entries) == sorted(ids)


def test_twenty_admissions_send_twenty_messages(r, keys, rooms, clock, smtp):
    """Admitting 20 sends exactly 20 messages, each with a valid link to its entry."""
    handler, port = smtp
    ids = admit(rooms, 20)
    mailer = mailer_of(rooms, port)
    while mailer.run_once():
        pass
    assert handler.count() == 20
    check_links(handler.messages, ids, clock)
    assert mailer.run_once() == 0  # all acknowledged: nothing again
    assert handler.count() == 20
    statuses = records(r, keys)
    assert len(statuses) == 20 and all(s["st"] == "sent" for s in statuses)
    assert Waitlists(rooms).mail_figures(ROOM) == MailFigures(sent=20, unsent=0, retry=0, failed=0)


def test_a_refused_send_is_retried_after_its_backoff(r, keys, rooms, clock, smtp):
    """An SMTP failure leaves the notice to retry later; it is then sent once."""
    handler, port = smtp
    admit(rooms, 1)
    broken = mailer_of(rooms, 1, clock=clock, backoff=5.0)
    broken.run_once()
    assert [s["st"] for s in records(r, keys)] == ["retry"]
    assert Waitlists(rooms).mail_figures(ROOM) == MailFigures(sent=0, unsent=1, retry=1, failed=0)
    mailer = mailer_of(rooms, port, clock=clock, backoff=5.0)
    mailer.run_once()
    assert handler.count() == 0  # the backoff has not passed
    clock.advance(6)
    mailer.run_once()
    mailer.run_once()
    assert handler.count() == 1
    assert Waitlists(rooms).mail_figures(ROOM) == MailFigures(sent=1, unsent=0, retry=0, failed=0)


def test_a_notice_is_failed_after_its_last_try(r, keys, rooms, clock):
    """Past the last try the notice is failed, counted so, and acknowledged."""
    admit(rooms, 1)
    broken = mailer_of(rooms, 1, clock=clock, backoff=1.0, attempts=2)
    broken.run_once()
    clock.advance(2)
    broken.run_once()
    assert [s["st"] for s in records(r, keys)] == ["failed"]
    assert Waitlists(rooms).mail_figures(ROOM) == MailFigures(sent=0, unsent=0, retry=0, failed=1)
    assert r.xpending(keys.waitlist(ROOM).outbox, GROUP)["pending"] == 0


def test_two_workers_at_once_send_each_notice_once(r, keys, rooms, clock, smtp):
    """Two workers sharing the outbox still send exactly 20."""
    handler, port = smtp
    ids = admit(rooms, 20)
    workers = [mailer_of(rooms, port, worker=f"w{i}") for i in range(2)]
    stop = threading.Event()
    threads = [threading.Thread(target=w.run, args=(stop,)) for w in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while handler.count() < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    assert handler.count() == 20
    check_links(handler.messages, ids, clock)


def spawn(redis_url, port, prefix):
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WEBAPP_REDIS_PREFIX": prefix,
        "WEBAPP_SECRET_KEY": SECRET,
        "WEBAPP_PUBLIC_URL": "https://w.example",
        "WEBAPP_SMTP_HOST": "127.0.0.1",
        "WEBAPP_SMTP_PORT": str(port),
        "WEBAPP_MAIL_LEASE_SECONDS": "1",
        "WEBAPP_MAIL_POLL_SECONDS": "0.1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "webapp.workers.mailer"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_a_worker_killed_mid_batch_still_sends_each_notice_once(
    r, keys, rooms, clock, smtp, redis_url
):
    """SIGKILL after some messages, start again: every entry gets exactly one notice
    (a resend after a kill between the server's 250 and the marker keeps its Message-ID)."""
    handler, port = smtp
    ids = admit(rooms, 20)
    worker = spawn(redis_url, port, keys.prefix)
    deadline = time.monotonic() + 20
    while handler.count() < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert 0 < handler.count() < 20
    worker = spawn(redis_url, port, keys.prefix)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pending = r.xpending(keys.waitlist(ROOM).outbox, GROUP)["pending"]
            if handler.count() >= 20 and pending == 0:
                break
            time.sleep(0.1)
    finally:
        worker.terminate()
        worker.wait(10)
    by_id = {}
    for message in handler.messages:
        by_id.setdefault(message["Message-ID"], []).append(message)
    assert len(by_id) == 20  # one notice per entry; any resend is recognisable
    check_links([copies[0] for copies in by_id.values()], ids, clock)
    assert handler.count() <= 21  # at most the one message in flight at the kill


def bodies(message):
    """The text and HTML parts of a message."""
    parts = message.get_payload()
    return [p.get_payload(decode=True).decode() for p in parts]


def test_each_kind_of_notice_is_sent_with_its_links(r, keys, rooms, clock, smtp):
    """confirm, admitted, lapsed and near each go out once, as text and HTML, with the
    entry's page link; confirm carries a confirmation link, admitted a claim link that
    ends at the lapse deadline."""
    handler, port = smtp
    rooms.configure(ROOM, {"kind": "waitlist", "claim_seconds": 3600, "notify_near": 1})
    waitlists = Waitlists(rooms, secret=b"s")
    ann = waitlists.join(ROOM, "Ann", "ann@example.org")
    waitlists.confirm(ROOM, ann.id)
    assert waitlists.sweep_turn(ROOM).near == 1
    rooms.admit(ROOM, 1)
    clock.advance(3600)
    assert waitlists.sweep_turn(ROOM).lapsed == 1
    mailer = mailer_of(rooms, port, clock=clock)
    while mailer.run_once():
        pass
    assert mailer.run_once() == 0
    by_kind = {m["X-Idempotency-Key"].rsplit(":", 1)[1]: m for m in handler.messages}
    assert sorted(by_kind) == ["admitted", "confirm", "lapsed", "near"]
    assert handler.count() == 4
    assert by_kind["lapsed"]["Subject"] == f"Your place in {ROOM} has lapsed"
    entry_link = f"https://w.example/rooms/{ROOM}/entry/"
    for kind, message in by_kind.items():
        text, html = bodies(message)
        assert message["To"] == "ann@example.org"
        link = next(w for w in text.split() if w.startswith(entry_link))
        assert URLSafeSerializer(SECRET, salt="entry").loads(link.rsplit("/", 1)[1]) == [
            ROOM,
            ann.id,
        ]
        assert entry_link in html, kind
    text, _ = bodies(by_kind["confirm"])
    link = next(w for w in text.split() if w.startswith("https://w.example/confirm/"))
    signed = URLSafeTimedSerializer(SECRET, salt="confirm").loads(link.rsplit("/", 1)[1])
    assert signed == [ROOM, ann.id, address_tag(ann.id, "ann@example.org")]  # its address
    text, _ = bodies(by_kind["admitted"])
    link = next(w for w in text.split() if w.startswith("https://w.example/claim/"))
    claim = verify_claim(SECRET, link.rsplit("/", 1)[1], clock() - 1)
    assert (claim.entry, claim.expires) == (ann.id, clock())


def test_a_second_confirmation_is_a_notice_of_its_own(r, keys, rooms, clock, smtp):
    """Signing up again unconfirmed an hour later sends a second confirmation, with its
    own Message-ID; the worker sends each once."""
    handler, port = smtp
    rooms.configure(ROOM, {"kind": "waitlist"})
    waitlists = Waitlists(rooms, secret=b"s")
    waitlists.join(ROOM, "Ann", "ann@example.org")
    clock.advance(3600)
    waitlists.join(ROOM, "Ann", "ann@example.org")
    mailer = mailer_of(rooms, port, clock=clock)
    while mailer.run_once():
        pass
    assert handler.count() == 2
    assert len({m["Message-ID"] for m in handler.messages}) == 2
    assert {m["Subject"] for m in handler.messages} == {f"Confirm your email for {ROOM}"}


def test_the_mailer_says_once_when_mail_cannot_be_sent(rooms, clock, smtp, caplog):
    """No SMTP server at the address: one plain warning, recorded for the pages and the
    panel (with a TTL); when one answers, one line says mail goes out again."""
    _, port = smtp
    health = MailHealth(rooms.client, rooms.keys)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
    broken = mailer_of(rooms, closed, clock=clock)
    with caplog.at_level(logging.INFO, logger="webapp.workers.mailer"):
        for _ in range(3):
            assert not broken.check_smtp().ok
    said = [r.getMessage() for r in caplog.records if "Mail cannot be sent" in r.getMessage()]
    assert len(said) == 1 and f"127.0.0.1:{closed}" in said[0]
    found = health.read()
    assert found is not None and not found.ok and found.server == f"127.0.0.1:{closed}"
    assert found.error == "Connection refused"  # in words, as the panel shows it
    assert 0 < rooms.client.pttl(rooms.keys.mail_health) <= 90_000
    broken.settings = broken.settings.changed(smtp_port=port)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="webapp.workers.mailer"):
        assert broken.check_smtp().ok and broken.check_smtp().ok
    assert [r.getMessage() for r in caplog.records] == [
        f"sending mail through the SMTP server at 127.0.0.1:{port}"
    ]
    assert health.sendable()


def test_while_no_smtp_server_answers_the_outbox_waits(rooms, clock):
    """A round while the server is down sends nothing and spends no tries: the notices
    wait in the outbox, unsent, until it answers."""
    admit(rooms, 2)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
    mailer = mailer_of(rooms, closed, clock=clock, poll=0.01)
    stop = threading.Event()
    worker = threading.Thread(target=mailer.run, args=(stop,))
    worker.start()
    time.sleep(0.3)
    stop.set()
    worker.join(5)
    assert Waitlists(rooms).mail_figures(ROOM) == MailFigures(sent=0, unsent=2, retry=0, failed=0)
