"""A small origin site for the gate's tests and bench: the shop a waiting room protects.

``python tests/site_origin.py PORT WAITING_ROOM_URL ROOM`` serves, on 127.0.0.1:PORT:
  GET  /shop/<anything>  a page saying "Origin page <path>" (what the test reads)
  GET  /static/<file>    an unguarded asset
  GET  /shop/checkout    releases the visitor's pass (POST <waiting room>/api/rooms/
                         <room>/release with it as a bearer token, {"sold": 1}) and
                         clears its cookie, as docs/gate.md tells a site to
It never checks the pass itself: the proxy's gate does (a site may, from the JWKS).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from http.cookies import SimpleCookie
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


def app_for(waiting_room: str, room: str) -> Any:
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
                request = urllib.request.Request(
                    f"{waiting_room}/api/rooms/{room}/release",
                    data=json.dumps({"sold": 1}).encode(),
                    method="POST",
                    headers={
                        "Authorization": f"Bearer {held.value}",
                        "Content-Type": "application/json",
                    },
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
    server = make_server(
        "127.0.0.1", port, app_for(waiting_room, room), server_class=Threaded, handler_class=Quiet
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
