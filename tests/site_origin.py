"""A small origin site for the gate's tests and bench: the shop a waiting room protects.

``python tests/site_origin.py PORT WAITING_ROOM_URL ROOM [SITE_KEY_FILE]`` serves, on
127.0.0.1:PORT:
  GET  /shop/<anything>  a page saying "Origin page <path>" (what the test reads)
  GET  /static/<file>    an unguarded asset
  GET  /shop/checkout    releases the visitor's pass and clears its cookie, as
                         docs/gate.md tells a site to: POST <waiting room>/api/rooms/
                         <room>/release with the room's site key (read from
                         SITE_KEY_FILE at each checkout) as the bearer token, the pass in
                         X-Waiting-Room-Pass and {"sold": 1}; without a key file, the
                         pass alone as the bearer and no sale
It never checks the pass itself: the proxy's gate does (a site may, from the JWKS).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from http.cookies import SimpleCookie
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


def release_headers(held: str, key_file: str) -> tuple[dict[str, str], dict[str, int]]:
    """The release's headers and body: with the site's key, the sale is counted."""
    headers = {"Content-Type": "application/json"}
    key = Path(key_file).read_text().strip() if key_file else ""
    if not key:
        return headers | {"Authorization": f"Bearer {held}"}, {}
    return headers | {"Authorization": f"Bearer {key}", "X-Waiting-Room-Pass": held}, {"sold": 1}


def app_for(waiting_room: str, room: str, key_file: str = "") -> Any:
    cookie_name = f"wr_pass_{room}"

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path.startswith("/static/"):
            start_response("200 OK", [("Content-Type", "text/css")])
            return [b"body { color: #123; }\n"]
        if path == "/shop/checkout":
            cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
            held = cookies.get(cookie_name)
            answer = b"no pass"
            if held is not None:
                headers, body = release_headers(held.value, key_file)
                request = urllib.request.Request(
                    f"{waiting_room}/api/rooms/{room}/release",
                    data=json.dumps(body).encode(),
                    method="POST",
                    headers=headers,
                )
                with urllib.request.urlopen(request, timeout=5) as reply:
                    answer = reply.read()
            start_response(
                "200 OK",
                [
                    ("Content-Type", "text/html; charset=utf-8"),
                    ("Set-Cookie", f"{cookie_name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"),
                ],
            )
            return [
                b"<!doctype html><title>Thanks</title><h1>Thank you for your order</h1>"
                b"<p id=released>" + answer + b"</p>"
            ]
        visitor = environ.get("HTTP_X_WAITING_ROOM_VISITOR", "")
        body = (
            f"<!doctype html><title>Shop</title><h1>Origin page {path}</h1>"
            f"<p id=visitor>{visitor}</p><p><a href=/shop/checkout>Check out</a></p>"
        )
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [body.encode()]

    return app


class Threaded(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    port, waiting_room, room = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    key_file = sys.argv[4] if len(sys.argv) > 4 else ""
    site = app_for(waiting_room, room, key_file)
    server = make_server("127.0.0.1", port, site, server_class=Threaded, handler_class=Quiet)
    server.serve_forever()


if __name__ == "__main__":
    main()
