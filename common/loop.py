"""`LoopThread`: a daemon thread running one asyncio loop, for objects with a synchronous API over async code.

Why the browser actor and the reward actor use Playwright's async API on such a private loop (not the sync API): a
step must have a hard time-out. A page stuck in an infinite script loop never answers `evaluate` or input events,
and the sync API offers no way to abandon such a call (evaluate has no time-out, and the sync dispatcher is bound to
the calling thread). With the async API every call runs under `asyncio.wait_for`, is cancelled on time-out, and the
hung page is then closed from the same loop. Their public methods stay synchronous (they submit a coroutine here
and wait), so the same class works called directly, from any thread, or as a Ray actor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one asyncio loop; `run` executes a coroutine there and waits for its result."""

    def __init__(self, name: str = "loop"):
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; `asyncio.wrap_future` awaits the result from another loop."""
        if not self._thread.is_alive() or self.loop.is_closed():
            coro.close()
            raise RuntimeError(f"{self.name} is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait; on time-out it is cancelled there and `TimeoutError` is raised."""
        fut = self.submit(coro)
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
