"""The actor's private event loop thread and the Chromium launch settings.

Why Playwright's async API on a private loop (not the sync API): a step must have a hard time-out. A page stuck in
an infinite script loop never answers `evaluate` or input events, and the sync API offers no way to abandon such a
call (evaluate has no time-out, and the sync dispatcher is bound to the calling thread). With the async API every
call runs under `asyncio.wait_for`, is cancelled on time-out, and the hung page is then closed from the same loop.
The public methods stay synchronous (they submit to the loop and wait), so the class works the same called
directly, from any thread, or as a Ray actor.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # A hidden tab's timers are throttled to 1/s; our settle wait relies on timers in the active tab.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
]


def chromium_executable() -> str | None:
    """$WEBAGENT_CHROMIUM, else the system Chromium, else None (Playwright's own download, if installed)."""
    explicit = os.environ.get("WEBAGENT_CHROMIUM")
    if explicit:
        return explicit
    for name in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(name):
            return name
    return shutil.which("chromium")


class LoopThread:
    """A daemon thread running one asyncio loop; `run` executes a coroutine there and waits for its result."""

    def __init__(self, name: str = "browser-actor"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if not self._thread.is_alive() or self.loop.is_closed():
            coro.close()
            raise RuntimeError("this BrowserActor is closed")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
