"""A local HTTP server for the browser-actor fixtures (Python's http.server in a thread, on a free port).

Besides the files in fixtures/ it answers:
  /slow?ms=N        a page (or fetch response) that arrives after N ms
  /redirect?to=URL  a 302 to URL (used to check that redirects off the allow-list are undone)
  /echo-cookies     a page showing the Cookie header the server received
  /account/delete   a "high-impact" page that the guard tests must never reach (hits are counted)
"""

from __future__ import annotations

import functools
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).with_name("fixtures")


class _Handler(SimpleHTTPRequestHandler):
    hits: dict[str, int] = {}

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        parts = urlsplit(self.path)
        q = parse_qs(parts.query)
        self.hits[parts.path] = self.hits.get(parts.path, 0) + 1
        if parts.path == "/slow":
            time.sleep(min(int(q.get("ms", ["500"])[0]), 10_000) / 1000)
            body = b"<!doctype html><title>Slow result</title><h1>slow done</h1><p>waited</p>"
            return self._send(200, body)
        if parts.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", q.get("to", ["/"])[0])
            self.end_headers()
            return None
        if parts.path == "/echo-cookies":
            cookie = (self.headers.get("Cookie") or "").replace("<", "&lt;")
            return self._send(200, f"<!doctype html><title>Echo</title><p>cookies: {cookie}</p>".encode())
        if parts.path == "/account/delete":
            return self._send(200, b"<!doctype html><title>Deleted</title><h1>account deleted</h1>")
        return super().do_GET()

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FixtureServer:
    def __init__(self) -> None:
        handler = functools.partial(_Handler, directory=str(FIXTURES))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.hits = _Handler.hits

    def __enter__(self) -> FixtureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}"
