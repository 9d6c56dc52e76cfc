"""How long the join's proof of work takes a browser and a native solver, side by side
(issues 25 and 29; docs/operations.md, "The proof of work's cost"): the app under
gunicorn (its own embedded Redis), Debian's Chromium, and for each challenge_cost a
number of new visitors pressing a room's join button. Each browser time runs from the
press to the join's POST leaving the page: the challenge fetched, solved in the page's
own Web Workers (static/js/challenge-worker.js: PBKDF2 in WebCrypto), the form sent
(answered by the bench, not the app). Right after each, the same challenge (the one the
page fetched) is solved natively:
CPython's hashlib.pbkdf2_hmac (OpenSSL, what a script would use), with as many
threads as the page ran workers, trying the counters in the page's order (the same
chunks, handed out in turn), so both do the same tries; and once more by the ``altcha``
library's own solver (one thread, counters from 0), for its CPU seconds. The same joins
are then timed with Chromium's CPU slowed down 4x through the DevTools protocol
(Emulation.setCPUThrottlingRate, as a phone's browser).

    .venv/bin/python bench/challenge_cost.py [--costs 2000,5000,10000] [--runs 8]
        [--throttle 4]

Prints per cost the medians (and the 90th percentile of Chromium's), and the median of
each join's native time over Chromium's: the goal is at least 0.5 (a native solver
takes at least half a browser's time), with Chromium's median at the default cost at
most 2 s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from servers import HOST, OPEN_JOIN_LIMITS, answers, free_port, spawn, stop, wait_until

from webapp.domain.settings import CHALLENGE_COST

CHROMIUM = "/usr/bin/chromium"
ADMIN = "bench-admin-token-0123456789"
CHUNKS = 40  # as static/js/challenge.js: the counters are tried in this many parts


def put_room(url: str, room: str, settings: dict[str, object]) -> None:
    request = urllib.request.Request(
        f"{url}/api/admin/rooms/{room}", data=json.dumps(settings).encode(), method="PUT"
    )
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {ADMIN}")
    urllib.request.urlopen(request, timeout=10).close()


def one_join(browser: Any, url: str, room: str, throttle: float) -> tuple[float, dict[str, Any]]:
    """A new visitor presses the join button: seconds until the join's POST leaves, and
    the challenge the page solved."""
    context = browser.new_context()
    try:
        page = context.new_page()
        if throttle > 1:
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        page.goto(f"{url}/rooms/{room}")
        # The join is timed until it leaves; answered here, the page stays (and can still
        # give the challenge's body)
        page.route(f"{url}/rooms/{room}/join", lambda route: route.fulfill(status=204))
        page.get_by_label("Your display name").fill("Bench")
        with (
            page.expect_request(
                lambda r: r.method == "POST" and r.url.endswith("/join"), timeout=120_000
            ),
            page.expect_response(lambda r: r.url.endswith("/challenge")) as fetched,
        ):
            began = time.perf_counter()
            page.locator("#join").click()
        took = time.perf_counter() - began
        return took, fetched.value.json()
    finally:
        context.close()


def native_solve(challenge: dict[str, Any], workers: int) -> tuple[float, float]:
    """The challenge solved with hashlib in ``workers`` threads (pbkdf2_hmac lets go of
    the GIL), the counters in the page's chunks handed out in turn: wall and CPU
    seconds."""
    parameters = challenge["parameters"]
    nonce, salt = bytes.fromhex(parameters["nonce"]), bytes.fromhex(parameters["salt"])
    prefix = bytes.fromhex(parameters["keyPrefix"])
    rounds, length = parameters["cost"], parameters["keyLength"]
    most = challenge["maxnumber"]
    size = max(math.ceil((most + 1) / CHUNKS), 10)
    chunks = iter(range(0, most + 1, size))
    lock, found = threading.Lock(), threading.Event()

    def work() -> None:
        while not found.is_set():
            with lock:
                start = next(chunks, None)
            if start is None:
                return
            for n in range(start, min(start + size - 1, most) + 1):
                key = hashlib.pbkdf2_hmac(
                    "sha256", nonce + n.to_bytes(4, "big"), salt, rounds, length
                )
                if key.startswith(prefix):
                    found.set()
                if found.is_set():
                    return

    wall, cpu = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found.is_set(), "no solution"
    return time.perf_counter() - wall, time.process_time() - cpu


def library_solve(challenge: dict[str, Any]) -> float:
    """The ``altcha`` library's solver, one thread from counter 0: CPU seconds."""
    from altcha import Challenge, solve_challenge

    cpu = time.process_time()
    assert solve_challenge(Challenge.from_dict(challenge), timeout=600) is not None
    return time.process_time() - cpu


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * 0.9), len(ordered) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--costs", default="2000,5000,10000")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--throttle", type=float, default=4.0)
    args = parser.parse_args()
    costs = [int(c) for c in args.costs.split(",")]
    from playwright.sync_api import sync_playwright

    directory = tempfile.mkdtemp(prefix="wr-bench-challenge-")
    url = f"http://{HOST}:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(WEB_CONCURRENCY="1", WEBAPP_DATA_DIR=directory, WEBAPP_ADMIN_TOKEN=ADMIN,
               WEBAPP_SECRET_KEY="bench-secret-key-0123456789", **OPEN_JOIN_LIMITS)  # fmt: skip
    log = Path(directory) / "gunicorn.log"
    argv = [sys.executable, "-m", "gunicorn", "-c", "python:webapp.web.gunicorn_conf",
            "--bind", url.removeprefix("http://"), "webapp:create_app()"]  # fmt: skip
    process = spawn(argv, log, env)
    try:
        wait_until(lambda: answers(f"{url}/api/rooms"), process, log)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
            )
            cores = browser.new_page().evaluate("navigator.hardwareConcurrency")
            workers = max(min(cores, 4), 1)
            print(f"Chromium, navigator.hardwareConcurrency = {cores}: the page runs "
                  f"{workers} workers and the native solver {workers} threads; "
                  f"{args.runs} joins per cost; medians, seconds")  # fmt: skip
            slow = f"{args.throttle:g}x CPU"
            print(f"{'challenge_cost':>14} {'Chromium':>9} {'p90':>6} {slow:>8}"
                  f" {'native':>7} {'native/Chromium':>15} {'native CPU s':>12}"
                  f" {'altcha CPU s':>12}")  # fmt: skip
            rows: dict[int, tuple[float, float]] = {}
            for cost in costs:
                room = f"cost-{cost}"
                put_room(url, room, {"capacity": 100000, "challenge": "on",
                                     "challenge_cost": cost})  # fmt: skip
                browser_s, native_s, ratios, cpu_s, library_s = [], [], [], [], []
                for _ in range(args.runs):
                    took, challenge = one_join(browser, url, room, 1.0)
                    wall, cpu = native_solve(challenge, workers)
                    browser_s.append(took)
                    native_s.append(wall)
                    ratios.append(wall / took)
                    cpu_s.append(cpu)
                    library_s.append(library_solve(challenge))
                slowed = [one_join(browser, url, room, args.throttle)[0]
                          for _ in range(args.runs)]  # fmt: skip
                median = statistics.median
                print(f"{cost:>14,} {median(browser_s):>9.2f} {p90(browser_s):>6.2f} "
                      f"{median(slowed):>8.2f} {median(native_s):>7.2f} "
                      f"{median(ratios):>15.2f} {median(cpu_s):>12.2f} "
                      f"{median(library_s):>12.2f}")  # fmt: skip
                rows[cost] = (median(browser_s), median(ratios))
            browser.close()
        goals(rows)
    finally:
        stop(process, timeout=15)
        shutil.rmtree(directory, ignore_errors=True)


def goals(rows: dict[int, tuple[float, float]]) -> None:
    """Issue 29's goals at the default challenge_cost, each with pass or MISS: a native
    solve takes at least 0.5x Chromium's time; Chromium's median is at most 2 s."""
    if CHALLENGE_COST not in rows:
        print(f"\n(the default challenge_cost, {CHALLENGE_COST:,}, was not measured)")
        return
    browser_s, ratio = rows[CHALLENGE_COST]
    print(f"\ngoals at the default challenge_cost, {CHALLENGE_COST:,}")
    for label, ok in (
        (f"native solve over Chromium's: {ratio:.2f} (at least 0.5)", ratio >= 0.5),
        (f"Chromium's median: {browser_s:.2f} s (at most 2 s)", browser_s <= 2),
    ):
        print(f"  {label:<62} {'pass' if ok else 'MISS'}")


if __name__ == "__main__":
    main()
