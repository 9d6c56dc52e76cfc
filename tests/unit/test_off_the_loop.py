"""Password hashing leaves the gevent loop: other greenlets run meanwhile."""

import subprocess
import sys
import textwrap


def test_a_password_check_does_not_stop_other_greenlets():
    """Under gevent, greenlets keep ticking while argon2 verifies (in a native thread);
    the same check run in the greenlet itself stops them for its whole length."""
    script = textwrap.dedent(
        """
        from gevent import monkey; monkey.patch_all()
        import gevent, time
        from argon2 import PasswordHasher
        from webapp.infra.periodic import off_the_loop
        hasher = PasswordHasher(time_cost=8, memory_cost=65536, parallelism=1)
        digest = hasher.hash("correct horse battery")
        def ticks(run):
            count = 0
            def ticker():
                nonlocal count
                while True:
                    gevent.sleep(0.001)
                    count += 1
            tick = gevent.spawn(ticker)
            gevent.sleep(0.01)
            before = count
            run(lambda: hasher.verify(digest, "correct horse battery"))
            after = count
            tick.kill()
            return after - before
        print(ticks(off_the_loop), ticks(lambda work: work()))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    offloaded, inline = map(int, done.stdout.split())
    assert inline == 0  # the greenlet held the loop for the whole hash
    assert offloaded >= 5  # the loop kept running while a thread hashed
