"""The panel's accounts as gunicorn's workers set them up at start: WEBAPP_ADMIN_PASSWORD
is written once, however many processes start together, and a wrong password is a
plain answer, never an exception."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher

from webapp.domain.admins import Admins

CHEAP = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


def test_workers_starting_together_set_the_password_once(r, keys):
    """Eight processes ensure the same password at once: one writes it."""
    workers = [Admins(r, keys, hasher=CHEAP) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        written = list(pool.map(lambda a: a.ensure("admin", "a long enough password"), workers))
    assert written.count(True) == 1
    assert workers[0].verify("admin", "a long enough password")
    assert not any(a.ensure("admin", "a long enough password") for a in workers)
    assert workers[0].ensure("admin", "another long password")  # a new one replaces it


def test_a_wrong_password_is_an_answer_in_the_hashing_thread(r, keys):
    """The check runs where ``hashing`` puts it (a thread pool under gevent) and comes
    back as False: nothing is raised there to be printed as a traceback."""
    raised: list[BaseException] = []

    def hashing(work):
        try:
            return work()
        except BaseException as error:
            raised.append(error)
            raise

    accounts = Admins(r, keys, hasher=CHEAP, hashing=hashing)
    accounts.add("admin", "a long enough password")
    assert not accounts.verify("admin", "not the password at all")
    assert not accounts.verify("nobody", "not the password at all")
    assert raised == []
