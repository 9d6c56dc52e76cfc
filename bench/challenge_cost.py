"""How long the join's proof of work takes in a browser (issue 25; docs/operations.md,
"Bots and abuse"): the app under gunicorn (its own embedded Redis), Debian's Chromium
with its CPU slowed down 4x through the DevTools protocol (Emulation.setCPUThrottlingRate,
as a phone's browser), and for each challenge_cost a number of new visitors pressing a
room's join button. Each time runs from the press to the join's POST leaving the page:
the challenge fetched, solved in the page's Web Workers, the form sent.

    .venv/bin/python bench/challenge_cost.py [--costs 50000,100000,200000] [--runs 8]
        [--throttle 4]

Prints the median and the 90th percentile per cost, throttled and not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from servers import HOST, OPEN_JOIN_LIMITS, answers, free_port, spawn, stop, wait_until

CHROMIUM = "/usr/bin/chromium"
ADMIN = "bench-admin-token-0123456789"


def put_room(url: str, room: str, settings: dict[str, object]) -> None:
    request = urllib.request.Request(
        f"{url}/api/admin/rooms/{room}", data=json.dumps(settings).encode(), method="PUT"
    )
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {ADMIN}")
    urllib.request.urlopen(request, timeout=10).close()


def one_join(browser: object, url: str, room: str, throttle: float) -> float:
    """A new visitor presses the join button; seconds until the join's POST leaves."""
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        if throttle > 1:
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        page.goto(f"{url}/rooms/{room}")
        page.get_by_label("Your display name").fill("Bench")
        with page.expect_request(
            lambda r: r.method == "POST" and r.url.endswith("/join"), timeout=120_000
        ):
            began = time.perf_counter()
            page.locator("#join").click()
        return time.perf_counter() - began
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--costs", default="50000,100000,200000")
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
    argv = [sys.executable, "-m", "gunicorn", "-c", "python:webapp.gunicorn_conf",
            "--bind", url.removeprefix("http://"), "webapp:create_app()"]  # fmt: skip
    process = spawn(argv, log, env)
    try:
        wait_until(lambda: answers(f"{url}/api/rooms"), process, log)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
            )
            cores = browser.new_page().evaluate("navigator.hardwareConcurrency")
            print(f"Chromium, navigator.hardwareConcurrency = {cores} (the page runs "
                  f"min(that, 4) workers); {args.runs} joins per line")  # fmt: skip
            print(f"{'challenge_cost':>14} {'CPU':>5} {'median s':>9} {'p90 s':>7}")
            for cost in costs:
                room = f"cost-{cost}"
                put_room(url, room, {"capacity": 100000, "challenge": "on",
                                     "challenge_cost": cost})  # fmt: skip
                for throttle in (1.0, args.throttle):
                    times = sorted(one_join(browser, url, room, throttle)
                                   for _ in range(args.runs))  # fmt: skip
                    p90 = times[min(int(len(times) * 0.9), len(times) - 1)]
                    print(f"{cost:>14} {f'{throttle:g}x':>5} "
                          f"{statistics.median(times):>9.2f} {p90:>7.2f}")  # fmt: skip
            browser.close()
    finally:
        stop(process, timeout=15)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
