"""The waiting page's poll next to the API's check-in: CPU per request in one process.

Everyone in line polls, so the waiting page's poll (``GET /rooms/<room>/line`` with
``HX-Request`` and a session cookie) is the request a host serves most after the API's
check-in (``GET /api/rooms/<room>/position/<token>``, answered before Flask). With
waiting.js it names the shape its page shows (``X-Line-Shape``) and, while that holds,
gets the figures alone (JSON); htmx alone gets the partial template every time. Both
run here next to the check-in and the bare endpoint of ``api_throughput.py`` (Flask and
one EVALSHA: ``baseline_app.py``), each through its app's test client (no sockets, no
server), against a private redis-server pinned to the other core, in interleaved
rounds; the figure is this process's CPU per request (``time.process_time``, Redis' own
excluded), median over rounds, and the ratios. The test client's own work (its cookie
jar, about 100 us a request) counts here, so this is the profiler's bench (``--profile``);
issue 32's goal, the poll's throughput at least the bare endpoint's, is judged under
gunicorn by ``api_throughput.py`` (its "waiting page's poll").

    .venv/bin/python bench/page_poll.py [--rounds 7] [--requests 300] [--profile]

Loopback only; bounded; stops its redis-server on the way out.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import logging
import os
import pstats
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs

import orjson
from servers import start_redis

ROOT = Path(__file__).resolve().parents[1]
ADMIN = "bench-admin-token-0123456789"
ROOM = "bench-poll"
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
POLL = re.compile(r'hx-get="(/rooms/[^"]+/line\?[^"]+)"')
SHAPE = re.compile(r'data-shape="([^"]+)"')


def cpu_per_request(call: Callable[[], None], n: int) -> float:
    """Microseconds of this process's CPU per call, over ``n`` calls."""
    began = time.process_time()
    for _ in range(n):
        call()
    return (time.process_time() - began) / n * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=300, help="per operation per round")
    parser.add_argument("--profile", action="store_true", help="then cProfile 2,000 polls")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="poll-")))
        port, redis_pid = start_redis(stack, workdir)
        with contextlib.suppress(OSError):  # Redis on one core, this process on the other
            os.sched_setaffinity(redis_pid, {1})
            os.sched_setaffinity(0, {0})
        os.environ.update(
            REDIS_URL=f"redis://127.0.0.1:{port}/0",
            WEBAPP_ADMIN_TOKEN=ADMIN,
            WEBAPP_SECRET_KEY="bench-secret-" + "x" * 32,
        )
        sys.path.insert(0, str(ROOT))
        logging.disable(logging.WARNING)  # the join limits' and the app's notes
        from webapp import create_app

        app = create_app()
        api = app.test_client()
        auth = {"Authorization": f"Bearer {ADMIN}"}
        room = {"capacity": 1, "dropout_seconds": 3600, "session_seconds": 86400}
        assert api.put(f"/api/admin/rooms/{ROOM}", json=room, headers=auth).status_code < 300
        api.post(f"/api/rooms/{ROOM}/join", json={}, environ_base={"REMOTE_ADDR": "10.0.0.1"})
        # a browser in line: the lobby's CSRF token, the join's POST, its waiting page
        browser = app.test_client()
        token = CSRF.search(browser.get("/").get_data(as_text=True))
        assert token, "no CSRF token on the lobby"
        joined = browser.post(
            f"/rooms/{ROOM}/join",
            data={"csrf_token": token.group(1), "name": "Bench"},
            environ_base={"REMOTE_ADDR": "10.0.0.2"},
        )
        assert joined.status_code == 303, joined.status_code
        found = POLL.search(browser.get(f"/rooms/{ROOM}").get_data(as_text=True))
        assert found, "no poll on the waiting page"
        first = found.group(1).replace("&amp;", "&")
        path, query = first.split("?")
        you = parse_qs(query)["t"][0]
        # an app in line
        reply = api.post(
            f"/api/rooms/{ROOM}/join", json={}, environ_base={"REMOTE_ADDR": "10.0.0.3"}
        )
        check_in_url = f"/api/rooms/{ROOM}/position/{reply.get_json()['token']}"

        def polling(figures: bool) -> Callable[[], None]:
            """The page's poll as waiting.js sends it (``figures``: with the shape its
            page shows, so a shape that holds gets the figures alone), or as htmx alone
            would (the whole partial every time); the next poll's URL from each answer."""
            url, shape = [first], [""]

            def poll() -> None:
                asks = {"HX-Request": "true", **({"X-Line-Shape": shape[0]} if shape[0] else {})}
                answer = browser.get(url[0], headers=asks)
                assert answer.status_code == 200, answer.status_code
                if answer.mimetype == "application/json":
                    update = orjson.loads(answer.get_data())  # (the browser's work, kept small)
                    url[0] = f"{path}?seen={update['seen']}&t={you}&shown={update['shown']}"
                    return
                html = answer.get_data(as_text=True)
                nxt, kept = POLL.search(html), SHAPE.search(html)
                assert nxt and kept, "the poll's answer asks no next poll"
                url[0] = nxt.group(1).replace("&amp;", "&")
                shape[0] = kept.group(1) if figures else ""

            return poll

        def check_in() -> None:
            answer = api.get(check_in_url)
            assert answer.status_code == 200, answer.status_code

        sys.path.insert(0, str(ROOT / "bench"))
        import baseline_app  # the bare endpoint: Flask and one EVALSHA (api_throughput.py)

        bare_client = baseline_app.create_app().test_client()

        def bare() -> None:
            answer = bare_client.get("/line/bench-bare-token")
            assert answer.status_code == 200, answer.status_code

        kinds = {
            "waiting page's poll, figures": polling(True),
            "waiting page's poll, partial": polling(False),
            "API check-in": check_in,
            "bare endpoint (one EVALSHA)": bare,
        }
        for each in kinds.values():
            cpu_per_request(each, 100)  # warm
        cpu: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(args.rounds):
            for name, each in kinds.items():
                cpu[name].append(cpu_per_request(each, args.requests))
        print("CPU of this process per request, medians of", args.rounds, "interleaved rounds")
        bares, checks = cpu["bare endpoint (one EVALSHA)"], cpu["API check-in"]
        for name, figures in cpu.items():
            line = f"  {name:<30} {statistics.median(figures):7.0f} us"
            if name.startswith("waiting"):
                of_bare = statistics.median(b / f for b, f in zip(bares, figures, strict=True))
                of_check = statistics.median(f / c for f, c in zip(figures, checks, strict=True))
                line += (
                    f"   per core {of_bare:.2f} of bare's, cost {of_check:.2f} of the check-in's"
                )
            print(line)
        print(
            "(the test client's own work included; issue 32's goal is judged under gunicorn: "
            'api_throughput.py, "waiting page\'s poll")'
        )
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            poll = kinds["waiting page's poll, figures"]
            for _ in range(2000):
                poll()
            profile.disable()
            pstats.Stats(profile).sort_stats("cumulative").print_stats("webapp|jinja2|flask", 40)


if __name__ == "__main__":
    main()
