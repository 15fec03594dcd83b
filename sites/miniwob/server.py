"""Serve the MiniWoB++ task pages that the `miniwob` package ships, over HTTP on 127.0.0.1.

    with MiniwobServer() as srv:          # port=0: a free port
        srv.url                           -> "http://127.0.0.1:<port>"
        srv.task_url("click-button")      -> ".../miniwob/click-button.html"

The package's `html/` folder holds `miniwob/*.html` (one page per task) and `core/` (core.js, jQuery, d3 ...); the
pages load `../core/...` relatively, so serving `html/` as the root keeps them working. A static folder needs no
framework: the standard library's threaded HTTP server serves it from a daemon thread. Pages are never opened as
`file:` URLs, so the browser actor's allow-list treats this server like any other site.
"""

from __future__ import annotations

import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def html_root() -> Path:
    """The `html/` folder of the installed `miniwob` package; a clear error when the package is missing."""
    try:
        import miniwob
    except ModuleNotFoundError as e:
        raise RuntimeError("the `miniwob` package is not installed: pip install miniwob==1.1.0") from e
    root = Path(miniwob.__file__).parent / "html"
    if not (root / "core" / "core.js").is_file():
        raise RuntimeError(f"{root} does not hold MiniWoB++'s core/core.js (an unexpected miniwob version?)")
    return root


class _Handler(SimpleHTTPRequestHandler):
    # The pages are UTF-8 but declare no charset; without one Chromium reads them as windows-1252 and
    # unicode-test's "Cancél" button would read "CancÃ©l".
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".html": "text/html; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".css": "text/css; charset=utf-8",
    }

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # per-request lines would drown training logs

    def list_directory(self, path: Any) -> None:  # only task pages and their assets are served
        self.send_error(404, "no directory listings")
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser context closed mid-download is routine at the end of every episode; anything else is shown.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class MiniwobServer:
    """One threaded static server for the package's `html/` folder; `start()` returns the base URL."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, root: Path | None = None) -> None:
        self.host, self.port = host, port
        self.root = root or html_root()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("MiniwobServer is not started")
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def task_url(self, name: str) -> str:
        return f"{self.url}/miniwob/{name}.html"

    def start(self) -> str:
        if self._httpd is None:
            handler = partial(_Handler, directory=str(self.root))
            self._httpd = _Server((self.host, self.port), handler)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name="miniwob-http", daemon=True
            )
            self._thread.start()
        return self.url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MiniwobServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
