"""The baselines for ``api_throughput.py``: bare Flask endpoints, one Redis call each.

Served by gunicorn with the same settings and worker class as the real app, so the
ratio of the two is what the waiting-room API costs on top of "Flask + one Redis call":
``gunicorn -c python:webapp.web.gunicorn_conf --pythonpath bench 'baseline_app:create_app()'``.

- ``GET /ping``: one ``INCR``: the cheapest round trip.
- ``POST /line`` and ``GET /line/<token>``: one ``EVALSHA`` of a three-command script
  (``ZADD NX``, ``ZRANK``, ``ZCARD``): a line in its barest form, the floor a join or a
  check-in of one script call could reach. Its reply is JSON of the same size class.
- ``/bare/ws``: a bare chat fan-out (flask-sock, for ``chat_latency.py --bare``): a
  ``{"type": "send", "text": ...}`` frame takes an id (``INCR``) and is published on one
  Redis channel; each process's one subscriber thread sends it to every socket it holds.
  No storage, no membership, no acknowledgements: the floor of a chat over pub/sub.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
from typing import Any

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue
from flask_sock import Sock

from webapp.redis.connection import connect

COUNTER = "bench:baseline:hits"
CHAT_IDS = "bench:baseline:chat-ids"
CHAT_CHANNEL = "bench:baseline:chat"
LINE = "bench:baseline:line"
# KEYS: 1 the line (zset). ARGV: 1 token, 2 score. Reply: {position (1 = head), length}
BARE_LINE = """
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
return {redis.call('ZRANK', KEYS[1], ARGV[1]) + 1, redis.call('ZCARD', KEYS[1])}
"""


def create_app() -> Flask:
    app = Flask(__name__)
    # The same client (and client options) the real app uses: one per process.
    client = connect(os.environ["REDIS_URL"])
    line = client.register_script(BARE_LINE)

    @app.get("/ping")
    def ping() -> ResponseReturnValue:
        return jsonify(hits=client.incr(COUNTER))

    def standing(token: str) -> ResponseReturnValue:
        position, length = line(keys=[LINE], args=[token, 1])  # ties order by token
        return jsonify(token=token, position=position, waiting=length)

    @app.post("/line")
    def join() -> ResponseReturnValue:
        return standing(secrets.token_urlsafe(18))

    @app.get("/line/<token>")
    def check_in(token: str) -> ResponseReturnValue:
        return standing(token)

    sockets: set[Any] = set()
    lock = threading.Lock()
    started = threading.Event()
    relays: list[threading.Thread] = []

    def relay() -> None:
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(CHAT_CHANNEL)
        started.set()
        for item in pubsub.listen():
            data = item["data"]
            text = data.decode() if isinstance(data, bytes) else str(data)
            with lock:
                targets = list(sockets)
            for ws in targets:
                with contextlib.suppress(Exception):
                    ws.send(text)

    app.config["SOCK_SERVER_OPTIONS"] = {"ping_interval": 15, "max_message_size": 16384}
    sock = Sock(app)

    @sock.route("/bare/ws")
    def bare_chat(ws: Any) -> None:
        with lock:
            if not relays:  # one subscriber per process, from the first socket on
                relays.append(threading.Thread(target=relay, daemon=True))
                relays[0].start()
            sockets.add(ws)
        started.wait(5)
        ws.send(json.dumps({"type": "chat.history", "messages": []}))
        try:
            while True:
                frame = json.loads(ws.receive())
                if frame.get("type") == "send":
                    message = {"type": "message", "id": client.incr(CHAT_IDS),
                               "text": frame.get("text")}  # fmt: skip
                    client.publish(CHAT_CHANNEL, json.dumps(message))
        finally:
            with lock:
                sockets.discard(ws)

    return app
