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


def test_a_worker_starting_beside_the_one_that_sets_it_waits_for_it(r, keys):
    """A slow hash in the first worker: the second returns only once the account is
    there, so it never serves the panel as if there were none."""
    slow = PasswordHasher(time_cost=3, memory_cost=65536, parallelism=1)
    first, second = Admins(r, keys, hasher=slow), Admins(r, keys, hasher=CHEAP)
    with ThreadPoolExecutor(2) as pool:
        setting = pool.submit(first.ensure, "admin", "a long enough password")
        while not r.exists(keys.admins_ensure) and not setting.done():
            pass  # the first holds the lock
        assert second.ensure("admin", "a long enough password") is False
        assert second.stamp("admin") is not None  # the account was there when it returned
        assert setting.result() is True


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
