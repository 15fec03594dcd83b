"""Waiting for a page to settle after an action, without fixed sleeps.

A page is settled when (1) its document has been parsed (`domcontentloaded`), (2) the DOM has seen no mutation, and
the page has started or finished no fetch / XHR, for `QUIET_MS` since the page last received input from the action
(our own id stamps excluded; never earlier than the action's start), and (3) no request that can change what the
agent reads is in flight (images, fonts and media are ignored; a request older than `LONG_POLL_S` that is not a
navigation is taken to be a long poll). Mutations, input events and the page's fetch / XHR calls are timed by a
clock every document of the episode's context starts with (`MUTATION_CLOCK_JS`, an init script), so quiet time that
passed while Playwright was still returning from the action counts: typing that changes nothing settles QUIET_MS
after its last key, not QUIET_MS after the call returned. A document without that clock is timed from the start of
the wait. A navigation that replaces the document mid-wait restarts the wait on the new document, whose clock starts
when it is created. The whole wait is bounded by `settle_timeout_s`; reaching the bound is not an error (the
observation shows what is there). Not covered: a page that changes after a pure timer that fires later than QUIET_MS
after its input, with no request in between (rare; a request started by such a timer within QUIET_MS is covered);
input and mutations inside an iframe (the main document's clock is read; the action's start still bounds the
window).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

QUIET_MS = (
    100  # DOM mutation-quiet window: long enough for a click's synchronous re-render + one microtask chain
)
LONG_POLL_S = 2.0  # requests running longer than this (not navigations) do not hold the settle wait
_IGNORED_TYPES = {"image", "font", "media", "websocket", "eventsource", "ping", "manifest", "texttrack"}

# Every document of an episode starts with this (BrowserContext.add_init_script): the wall-clock time of its last
# DOM mutation (our own id stamps excluded), input event, or fetch / XHR start or end, whichever came later. An input
# event counts because the quiet window must start when the page received the action (a click handler's timer is
# what the window waits for), not when Playwright began it (actionability checks come first). Wall-clock (Date.now)
# so Python can give the action's start as a lower bound. `_CLOCK` installs it on the document it runs in (once)
# and returns it.
_CLOCK = """
() => {
  if (window.__waMutations) return window.__waMutations;
  const now = Date.now.bind(Date);  // kept before any page script runs (a page may replace Date)
  const clock = window.__waMutations = { last: now(), now };
  new MutationObserver((ms) => {
    for (const m of ms) { if (m.type !== 'attributes' || m.attributeName !== 'data-wa-id') { clock.last = now(); return; } }
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const touched = () => { clock.last = now(); };
  for (const type of ['mousedown', 'mouseup', 'click', 'keydown', 'keyup', 'input', 'change', 'wheel', 'scroll', 'submit'])
    window.addEventListener(type, touched, { capture: true, passive: true });
  // A fetch or XHR the page starts or finishes is activity too: the page knows of it at once, while Playwright's
  // request event can reach Python after the quiet wait's answer (a timer's fetch then looked like a quiet page).
  const pageFetch = window.fetch;
  if (typeof pageFetch === 'function')
    window.fetch = function (...args) {
      touched();
      const p = pageFetch.apply(this, args);
      p.then(touched, touched);
      return p;
    };
  if (typeof XMLHttpRequest === 'function') {
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...args) {
      touched();
      this.addEventListener('loadend', touched);
      return send.apply(this, args);
    };
  }
  return clock;
}
"""
MUTATION_CLOCK_JS = f"({_CLOCK})();"

# Resolves once the DOM has been quiet for `quiet` ms since max(its clock's last mutation or input, `since`: the
# action's start, wall-clock ms), or `limit` ms passed. A document without a clock gets one now, which then starts
# the window.
_QUIET_JS = f"""
([quiet, limit, since]) => new Promise((resolve) => {{
  const fresh = !window.__waMutations;
  const clock = ({_CLOCK})();
  const t0 = clock.now();
  const floor = fresh ? t0 : since;
  const tick = () => {{
    const now = clock.now();
    const last = Math.max(clock.last, floor);
    if ((document.readyState !== 'loading' && now - last >= quiet) || now - t0 >= limit) resolve(now - last >= quiet);
    else setTimeout(tick, Math.max(10, quiet - (now - last)));
  }};
  tick();
}})
"""


class NetworkTracker:
    """Counts a page's in-flight requests from Playwright's request events; `idle` is set when none matter."""

    def __init__(self, page: Any):
        self._inflight: dict[Any, tuple[float, bool]] = {}
        self.idle = asyncio.Event()
        self.idle.set()
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _start(self, request: Any) -> None:
        if request.resource_type in _IGNORED_TYPES:
            return
        self._inflight[request] = (time.monotonic(), request.is_navigation_request())
        self.idle.clear()

    def _end(self, request: Any) -> None:
        if self._inflight.pop(request, None) is not None and self.quiet():
            self.idle.set()

    def quiet(self) -> bool:
        now = time.monotonic()
        return all(not nav and now - t0 > LONG_POLL_S for t0, nav in self._inflight.values())

    def pending(self) -> int:
        return len(self._inflight)

    def next_change_s(self, default: float) -> float:
        """Seconds until the youngest non-navigation request turns into a presumed long poll."""
        now = time.monotonic()
        waits = [t0 + LONG_POLL_S - now for t0, nav in self._inflight.values() if not nav]
        return max(0.01, min([default, *[w for w in waits if w > 0]]))


def _is_navigation_error(err: Exception) -> bool:
    msg = str(err)
    return any(
        s in msg
        for s in (
            "Execution context was destroyed",
            "navigat",
            "Target page, context or browser",
            "Cannot find context",
        )
    )


async def settle(
    page: Any, tracker: NetworkTracker | None, timeout_s: float, since: float | None = None
) -> bool:
    """Wait until `page` is settled or `timeout_s` passed; True when it settled. Raises only when the page closed.
    `since`: when the action began (`time.time()`; default now): the DOM must have been quiet for QUIET_MS since."""
    since_ms = (time.time() if since is None else since) * 1000
    from playwright.async_api import Error as PlaywrightError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (remaining := deadline - loop.time()) > 0:
        try:
            await page.wait_for_load_state("domcontentloaded", timeout=remaining * 1000)
            dom_quiet = await page.evaluate(
                _QUIET_JS, [QUIET_MS, max(1.0, (deadline - loop.time()) * 1000), since_ms]
            )
        except PlaywrightError as e:
            if page.is_closed():
                raise
            if _is_navigation_error(e) or "Timeout" in str(e):
                continue  # the document was replaced (navigation): wait again on the new one
            raise
        if tracker is None or tracker.quiet():
            if dom_quiet:
                return True
            continue
        # Requests still in flight: wait for them (event, not polling), then re-check the DOM.
        try:
            await asyncio.wait_for(tracker.idle.wait(), timeout=tracker.next_change_s(deadline - loop.time()))
        except asyncio.TimeoutError:
            pass  # a request aged into a long poll, or the deadline: the loop condition decides
    return False
