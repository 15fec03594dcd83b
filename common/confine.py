"""Confinement before the request: every request of a page is paused inside Chromium (CDP `Fetch`) and the ones
off the allow-list are failed before they are sent.

Playwright's routes see the first request of a chain only, not its redirect hops, so a redirect (or a sub-resource
that redirects) used to reach an off-list host before the actor noticed and undid it. `Fetch.requestPaused` is
issued for redirect hops too, so here nothing off the list ever leaves the browser. Used by the rollout browser
(browser_actors/context.py) and the reward actor's browser (reward/actor.py). Allowed requests cost one CDP round
trip on the local pipe (well under a millisecond).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from common.allowlist import AllowList
from common.text import cut

PAUSE_EVERY_REQUEST = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
# What a refused request fails with: a navigation is "Aborted" (the page stays where it was, no error page is
# committed, like a cancelled click); a sub-resource is "BlockedByClient".
OnBlock = Callable[[str, str, bool, bool], None]  # (url, why, is_navigation, is_redirect_hop)


async def confine(
    cdp: Any, allow: AllowList, on_block: OnBlock | None = None, skip: frozenset[str] = frozenset()
) -> None:
    """Pause every request of the page behind `cdp` (a Playwright CDPSession) and fail those `allow` refuses.
    `skip`: CDP resource types failed even on the list, unreported (the reward checks skip images, media and fonts:
    they read the DOM, and a page's `load` then does not wait for pictures)."""
    pending: set[asyncio.Task[None]] = set()  # strong references: the loop keeps only weak ones

    async def decide(ev: dict[str, Any]) -> None:
        url = ev["request"]["url"]
        why = allow.check(url)
        try:
            if why is None and ev.get("resourceType") in skip:
                await cdp.send(
                    "Fetch.failRequest", {"requestId": ev["requestId"], "errorReason": "BlockedByClient"}
                )
                return
            if why is None:
                await cdp.send("Fetch.continueRequest", {"requestId": ev["requestId"]})
                return
            nav = ev.get("resourceType") == "Document"
            await cdp.send(
                "Fetch.failRequest",
                {"requestId": ev["requestId"], "errorReason": "Aborted" if nav else "BlockedByClient"},
            )
        except Exception:  # noqa: BLE001 - the page or its target went away meanwhile
            return
        if on_block is not None:
            on_block(url, why, nav, ev.get("redirectedRequestId") is not None)

    def on_paused(ev: dict[str, Any]) -> None:
        task = asyncio.ensure_future(decide(ev))
        pending.add(task)
        task.add_done_callback(pending.discard)

    cdp.on("Fetch.requestPaused", on_paused)
    await cdp.send("Fetch.enable", PAUSE_EVERY_REQUEST)


class OffList(RuntimeError):
    """A request (or one of its redirect hops) would have left the allow-list."""


async def checked_get(request: Any, url: str, allow: AllowList, timeout_ms: float, max_hops: int = 10) -> Any:
    """GET through a Playwright APIRequestContext, following redirects one hop at a time and raising OffList
    before a hop off the allow-list is requested (the request context follows redirects unchecked)."""
    from urllib.parse import urljoin

    for _ in range(max_hops + 1):
        if why := allow.check(url):
            raise OffList(f"{cut(url, 200)} blocked: {why}")
        resp = await request.get(url, max_redirects=0, fail_on_status_code=False, timeout=timeout_ms)
        location = resp.headers.get("location")
        if not (300 <= resp.status < 400 and location):
            return resp
        url = urljoin(url, location)
    raise OffList(f"more than {max_hops} redirects from {cut(url, 200)}")
