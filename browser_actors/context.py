"""One episode's browser context: its tabs, and what happened in them during the current step.

The actor opens one `EpisodeContext` per episode (so cookies, storage and sandboxes never leak between episodes;
a MiniWoB++ episode may follow another in its emptied tab, `BrowserActor._reusable_tab`)
and reads, after each action, the events collected here: navigations refused by the allow-list or the guard,
pop-ups the page opened, redirects that left the allow-list, crashed pages. Every page is confined in Chromium
(common/confine.py: redirect hops and sub-resources off the list are failed before they are sent); a
pop-up's first navigation, which starts before its page can be confined, is made and its redirects walked in
`_hold_until_confined`. The context's routes still refuse off-list first requests and report them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urljoin

from browser_actors.safety import AllowList, Guard
from browser_actors.settle import MUTATION_CLOCK_JS, NetworkTracker
from common.confine import confine
from common.text import cut

VIEWPORT = {"width": 1280, "height": 720}
MAX_HOPS = 10  # redirects walked for a pop-up's first navigation (Chromium itself stops at 20)


class EpisodeContext:
    def __init__(self, allow: AllowList, guard: Guard):
        self.allow, self.guard = allow, guard
        self.context: Any = None
        self.trackers: dict[Any, NetworkTracker] = {}
        self.cdp: dict[Any, Any] = {}
        self.blocked: list[tuple[Any, str]] = []  # (page, message) of navigations refused during this step
        self.popups: list[Any] = []  # pages opened during this step
        self.escaped: set[Any] = set()  # pages a redirect took off the allow-list during this step
        self.crashed: set[Any] = set()
        self._confining: dict[Any, asyncio.Task[None]] = {}
        self._opening = 0  # pop-up first navigations being made in `_hold_until_confined` now
        self._fulfilled = 0  # ... and made during this step: that many pop-ups are about to appear
        self.step_started = time.time()

    async def open(self, browser: Any, storage_state: Any, cookies: list[dict], timeout_s: float) -> None:
        ctx = await browser.new_context(
            storage_state=storage_state,
            accept_downloads=False,
            service_workers="block",  # a service worker would fetch past our routes
            viewport=VIEWPORT,
        )
        ctx.set_default_timeout(timeout_s * 1000)
        await ctx.add_init_script(MUTATION_CLOCK_JS)  # every document times its DOM mutations (settle.py)
        ctx.on("page", self._on_page)
        ctx.on("request", self._on_request)
        await ctx.route(self.allow.block_regex(), self._refuse)
        await ctx.route("**/*", self._hold_until_confined)  # registered last: runs first
        if self.guard:
            await ctx.route("**/*", self._guard_route)
        if cookies:
            await ctx.add_cookies(cookies)
        self.context = ctx

    async def close(self) -> bool:
        """False when the context would not close (its browser is then beyond saving)."""
        try:
            await asyncio.wait_for(self.context.close(), 15)
            return True
        except Exception:  # noqa: BLE001 - reported to the caller, which relaunches the browser
            return False

    @property
    def pages(self) -> list[Any]:
        return self.context.pages

    def begin_step(self) -> None:
        self.step_started = time.time()  # the settle wait counts the DOM's quiet time from here
        self.blocked.clear()
        self.popups.clear()
        self.escaped.clear()
        self._fulfilled = 0

    async def wait_for_popups(self, timeout_s: float) -> None:
        """Pop-ups whose first navigation `_hold_until_confined` is making (or made) appear only after it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (self._opening or len(self.popups) < self._fulfilled) and loop.time() < deadline:
            await asyncio.sleep(0.02)

    def forget(self, page: Any) -> None:
        self.trackers.pop(page, None)
        self.cdp.pop(page, None)
        self.crashed.discard(page)
        self._confining.pop(page, None)

    async def confine(self, page: Any) -> None:
        """Returns once every later request of `page` is checked inside Chromium (started on the page event)."""
        if page not in self._confining:
            self._confining[page] = asyncio.ensure_future(self._confine(page))
        await self._confining[page]

    async def _confine(self, page: Any) -> None:
        def on_block(url: str, why: str, nav: bool, hop: bool) -> None:
            if not nav:
                return
            if hop:
                self.escaped.add(page)
            kind = " (a redirect)" if hop else ""
            self.blocked.append((page, f"navigation to {cut(url, 200)}{kind} blocked: {why}"))

        try:
            await confine(await self.cdp_for(page), self.allow, on_block)
        except Exception:  # noqa: BLE001 - the page closed before it was confined: nothing left to confine
            pass

    async def cdp_for(self, page: Any) -> Any:
        """One CDP session per page, made when first needed (confinement, accessibility-tree mode)."""
        if page not in self.cdp:
            self.cdp[page] = await self.context.new_cdp_session(page)
        return self.cdp[page]

    def refused(self, page: Any) -> list[str]:
        return [m for p, m in self.blocked if p is page]

    # ---- event handlers (run on the actor's loop) --------------------------------------------------------
    def _on_page(self, page: Any) -> None:
        self.trackers[page] = NetworkTracker(page)
        page.on("crash", lambda p: self.crashed.add(p))  # Playwright cannot wrap a builtin method
        self.popups.append(page)
        self._confining[page] = asyncio.ensure_future(self._confine(page))

    def _on_request(self, request: Any) -> None:
        """Routes do not see redirect hops: a redirect off the allow-list that got past confinement (a pop-up's
        first request, before its CDP session is up) is noted here and undone by the actor."""
        if request.redirected_from is None or not request.is_navigation_request():
            return
        if why := self.allow.check(request.url):
            page = _page_of(request)
            self.escaped.add(page)
            self.blocked.append((page, f"navigation to {cut(request.url, 200)} (a redirect) blocked: {why}"))

    async def _refuse(self, route: Any, request: Any) -> None:
        """Every request outside the allow-list lands here: aborted; a navigation is reported to the agent."""
        nav = request.is_navigation_request()
        if nav:
            why = self.allow.check(request.url) or "not allowed"
            self.blocked.append((_page_of(request), f"navigation to {cut(request.url, 200)} blocked: {why}"))
        try:
            # "aborted" leaves the page where it was (no error page is committed), like a cancelled click
            await route.abort("aborted" if nav else "blockedbyclient")
        except Exception:  # noqa: BLE001 - the page went away meanwhile
            pass

    async def _hold_until_confined(self, route: Any, request: Any) -> None:
        """A pop-up's first navigation starts before its page exists for Playwright, so before it can be confined
        in Chromium: that request is made here instead (no redirect followed) and its redirect chain walked;
        any hop off the allow-list refuses the pop-up before the hop is requested. Pages that exist wait for
        their confinement."""
        page = _page_of(request)
        if page is not None or not request.is_navigation_request() or self.allow.check(request.url):
            if page is not None:
                await self.confine(page)
            return await _fallback(route)  # an off-list first request: the block route refuses and reports it
        self._opening += 1
        try:
            first = await route.fetch(max_redirects=0)
            url, resp = request.url, first
            for _ in range(MAX_HOPS):
                location = resp.headers.get("location")
                if not (300 <= resp.status < 400 and location):
                    break
                url = urljoin(url, location)
                if why := self.allow.check(url):
                    self.blocked.append((None, f"navigation to {cut(url, 200)} (a redirect) blocked: {why}"))
                    return await route.abort("aborted")
                resp = await self.context.request.get(url, max_redirects=0, fail_on_status_code=False)
            await route.fulfill(response=first)  # the browser follows the hops just checked
            self._fulfilled += 1
        except Exception:  # noqa: BLE001 - the pop-up or its context went away meanwhile
            pass
        finally:
            self._opening -= 1

    async def _guard_route(self, route: Any, request: Any) -> None:
        refusal = self.guard.check(request.url) if request.is_navigation_request() else None
        if refusal:
            self.blocked.append((_page_of(request), refusal))
            await route.abort("aborted")
        else:
            await route.fallback()


async def _fallback(route: Any) -> None:
    try:
        await route.fallback()
    except Exception:  # noqa: BLE001 - the page went away meanwhile
        pass


def _page_of(request: Any) -> Any:
    try:
        return request.frame.page
    except Exception:  # noqa: BLE001 - a request of a service worker, a detached frame, a pop-up not yet a page
        return None
