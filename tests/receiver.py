"""A webhook receiver on loopback for the tests: a real HTTP server on a free port that
records every request (headers, body, when) and answers with the status the test sets;
it can be stopped and started again on the same port (a receiver that is down)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    status: int
    at: float

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def event(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed

    def verify(self, secret: str) -> Any:
        """The standardwebhooks package's own check of the signature."""
        return Webhook(secret).verify(self.body, self.headers)


class Receiver:
    def __init__(self, port: int = 0) -> None:
        self.received: list[Received] = []
        self.status = 204
        self.delay = 0.0  # seconds before answering
        self.lock = threading.Lock()
        self.port = port
        self.server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if receiver.delay:
                    time.sleep(receiver.delay)
                # A sender killed between its headers and its body leaves a short body: a
                # real receiver refuses it (400) and the sender's retry brings it whole.
                status = receiver.status if len(raw) == length else 400
                body = raw.decode(errors="replace")
                with receiver.lock:
                    receiver.received.append(
                        Received(
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            status,
                            time.time(),
                        )
                    )
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def ok(self) -> list[Received]:
        """The requests it answered with a 2xx."""
        with self.lock:
            return [r for r in self.received if 200 <= r.status < 300]
