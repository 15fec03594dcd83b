"""One episode's browser context: its tabs, and what happened in them during the current step.

The actor opens one `EpisodeContext` per episode (so cookies, storage and sandboxes never leak between episodes)
and reads, after each action, the events collected here: navigations refused by the allow-list or the guard,
pop-ups the page opened, redirects that left the allow-list (routes do not see redirect hops), crashed pages.
"""

from __future__ import annotations

import asyncio
from typing import Any

from browser_actors.safety import AllowList, Guard
from browser_actors.settle import NetworkTracker
from common.text import cut

VIEWPORT = {"width": 1280, "height": 720}


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

    async def open(self, browser: Any, storage_state: Any, cookies: list[dict], timeout_s: float) -> None:
        ctx = await browser.new_context(
            storage_state=storage_state,
            accept_downloads=False,
            service_workers="block",  # a service worker would fetch past our routes
            viewport=VIEWPORT,
        )
        ctx.set_default_timeout(timeout_s * 1000)
        ctx.on("page", self._on_page)
        ctx.on("request", self._on_request)
        await ctx.route(self.allow.block_regex(), self._refuse)
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
        self.blocked.clear()
        self.popups.clear()
        self.escaped.clear()

    def forget(self, page: Any) -> None:
        self.trackers.pop(page, None)
        self.cdp.pop(page, None)
        self.crashed.discard(page)

    async def cdp_for(self, page: Any) -> Any:
        """One CDP session per page, made when first needed (accessibility-tree mode)."""
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

    def _on_request(self, request: Any) -> None:
        """Routes do not see redirect hops: a redirect off the allow-list is noted here and undone by the actor."""
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

    async def _guard_route(self, route: Any, request: Any) -> None:
        refusal = self.guard.check(request.url) if request.is_navigation_request() else None
        if refusal:
            self.blocked.append((_page_of(request), refusal))
            await route.abort("aborted")
        else:
            await route.fallback()


def _page_of(request: Any) -> Any:
    try:
        return request.frame.page
    except Exception:  # noqa: BLE001 - a request of a service worker or a detached frame
        return None
