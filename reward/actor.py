"""RewardActor: scores finished episodes with WebArena-Lite's checks; Ray wraps it where it is launched.

    actor = RewardActor(cfg.reward, env_urls=srv.urls, helpers="bundled")
    reward = actor.score(task, final_state)                 # sync; the task's placeholders are filled already
    rewards = actor.score_many([(task, final), ...])        # concurrently, results in order
    reward = await actor.ascore(task, final)                # from any event loop
    ray.remote(RewardActor).options(name="reward-0").remote(cfg.reward, env_urls=...)   # on a cluster

Checks that visit pages run in the actor's own Chromium (one browser per actor, launched on first need), in a
context of the episode's own carrying its storage state (login) and `wa_sandbox` cookie, so it sees exactly the
data the episode wrote. That context reaches only the run's sites (`env_urls`): requests, redirect hops and
sub-resources elsewhere are refused before they are sent. Opening a context's page (a renderer process) is the
largest cost of a check that navigates, so contexts are not thrown away: when an episode's checks are done its
page leaves for about:blank and its context is wiped (every cookie, and all storage of the run's origins: local
and session storage, IndexedDB, cache storage), and the next episode takes it; while none is idle, one is opened
ahead. A context that cannot be wiped is closed. The HTTP cache is never read: request interception (the
allow-list's route) turns it off. Many episodes are scored at once (`max_concurrency`). The browser lives on the
actor's private event-loop thread; `ascore` forwards to it from whatever loop calls it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from common.allowlist import AllowList
from common.chromium import CHROMIUM_ARGS, chromium_executable
from common.config import RewardConfig
from common.confine import OffList, checked_get, confine
from common.loop import LoopThread
from common.net import origin
from common.records import FinalState, Reward
from common.sites import SANDBOX_COOKIE
from common.tasks import PLACEHOLDERS, Task
from common.text import cut
from reward.funcs import make_helpers
from reward.judge import Judge, make_judge
from reward.plan import PlanError, build_plan
from reward.score_plan import NavigationError, SandboxGone, run_plan

# What a check never reads: pictures, media and fonts are not fetched, so `load` waits for the document, its
# styles and scripts only (styles stay: they decide what `outerText` shows).
UNREAD_RESOURCES = frozenset({"Image", "Media", "Font"})
# Wiped contexts kept for the next episodes; beyond them a finished episode's context is closed. 2, not
# max_concurrency: with 8 kept, 20 checks scored at once took 352 ms each against 255 ms with 2 (one run of
# bench/bench_reward.py each, a 2-core machine), the idle renderers competing with the working ones.
IDLE_CONTEXTS = 2
_Idle = tuple[str, Any, Any, bool]  # (allow-list key, context, page, whether it was wiped after an episode)
SANDBOX_MISSING_HEADER = "x-wa-sandbox-missing"  # sites/core.py sets it on the 403 for a token that is gone


class _Session:
    """One episode's page and cookies; navigation waits for the load state (and network idle when asked)."""

    def __init__(self, actor: RewardActor, final: FinalState, storage_state: Any, allow: AllowList) -> None:
        self.actor, self.final, self.storage_state, self.allow = actor, final, storage_state, allow
        self.current_url = final.url
        self._page: Any = None
        self._loaded = False  # whether the page shows `current_url`
        self._context: Any = None

    async def _ensure_context(self) -> Any:
        if self._context is None:
            self._context, self._page = await self.actor._page_for(self.allow, self.storage_state)
            if self.final.sandbox:
                origins = {origin(u) for u in self.final.env_urls.values() or self.actor.env_urls.values()}
                await self._context.add_cookies(
                    [
                        {"name": SANDBOX_COOKIE, "value": self.final.sandbox, "url": o}
                        for o in sorted(origins)
                        if o
                    ]
                )
        return self._context

    async def page(self) -> Any:
        """The page at the session's current URL: the episode's last page, loaded on first use."""
        page = await self._open()
        if not self._loaded and self.current_url and self.current_url != "about:blank":
            await self.goto(self.current_url)
        return page

    async def _open(self) -> Any:
        """The session's page (made with its context), not navigated: a check that goes to its own URL first never
        loads the episode's last page (one page load per such check, not two)."""
        await self._ensure_context()
        return self._page

    async def goto(self, url: str) -> None:
        from playwright.async_api import Error as PwError
        from playwright.async_api import TimeoutError as PwTimeout

        page = await self._open()
        try:
            resp = await page.goto(url, wait_until="load", timeout=self.actor.nav_timeout_s * 1000)
        except PwError as e:
            raise NavigationError(f"could not load {url}: {cut(str(e).splitlines()[0], 120)}") from e
        self._check_sandbox(resp, url)
        if self.actor.settle == "networkidle":
            try:  # some real sites never go quiet; past the cap we check what is there, as browsergym does
                await page.wait_for_load_state("networkidle", timeout=self.actor.idle_cap_s * 1000)
            except PwTimeout:
                pass
        self.current_url, self._loaded = page.url, True

    async def http_get(self, url: str) -> tuple[int, Any]:
        from playwright.async_api import Error as PwError

        context = await self._ensure_context()
        try:
            resp = await checked_get(context.request, url, self.allow, self.actor.nav_timeout_s * 1000)
            body = await resp.text()
        except OffList as e:
            raise NavigationError(f"could not fetch {url}: {e}") from e
        except PwError as e:
            raise NavigationError(f"could not fetch {url}: {cut(str(e).splitlines()[0], 120)}") from e
        self._check_sandbox(resp, url)
        try:
            return resp.status, json.loads(body)
        except ValueError:
            return resp.status, None

    def _check_sandbox(self, resp: Any, url: str) -> None:
        if resp is not None and self.final.sandbox and resp.headers.get(SANDBOX_MISSING_HEADER):
            raise SandboxGone(
                f"sandbox {self.final.sandbox[:6]}... is gone at {cut(url, 120)} (dropped or expired before "
                "scoring): the episode's data cannot be checked"
            )

    async def close(self) -> None:
        """Hand the context back to the actor, which wipes it for the next episode (or closes it)."""
        context, self._context = self._context, None
        if context is not None:
            await self.actor._give_back(context, self._page, self.allow)


def _cookies_only(storage_state: Any) -> list[dict] | None:
    """The cookies of a storage state (a dict, a JSON file's path, or none), or None when it also holds local
    storage (which only a new context can be given)."""
    if not storage_state:
        return []
    state = (
        json.loads(Path(storage_state).read_text())
        if isinstance(storage_state, (str, Path))
        else storage_state
    )
    if any(o.get("localStorage") for o in state.get("origins") or []):
        return None
    return list(state.get("cookies") or [])


async def _close_quietly(context: Any) -> None:
    try:
        await context.close()
    except Exception:  # noqa: BLE001 - already closed with its browser, or the browser is gone
        pass


def _filled(task: Task) -> Task:
    """The task, checked for placeholders its checks would use: tasks are filled once, where they are loaded."""
    checks = json.dumps(task.eval.model_dump(mode="json"))
    left = [p for p in PLACEHOLDERS if p in checks]
    if left:
        raise PlanError(
            f"task {task.task_id}: its checks still hold {', '.join(left)}; fill the task where it is loaded "
            "(Task.with_urls(environment urls))"
        )
    return task


class RewardActor:
    """Scores `(Task, FinalState)` pairs; see the module docstring."""

    def __init__(
        self,
        cfg: RewardConfig | None = None,
        *,
        env_urls: dict[str, str] | None = None,
        helpers: str = "bundled",
        judge: Judge | None = None,
        auth_dir: str | Path | None = None,
        settle: str | None = None,
        nav_timeout_s: float = 30.0,
        idle_cap_s: float = 5.0,
        max_concurrency: int = 8,
        html_unescape: bool = True,
        judge_cache: str | None = None,
        live: bool = True,
        **helper_kwargs: Any,
    ) -> None:
        self.cfg = cfg or RewardConfig()
        self.env_urls = dict(env_urls or {})
        self.helpers = make_helpers(helpers, **helper_kwargs)
        self.judge = (
            judge
            if judge is not None
            else make_judge(self.cfg.judge, self.cfg.judge_url, self.cfg.judge_model, judge_cache)
        )
        self.auth_dir = Path(auth_dir) if auth_dir else None
        # Bundled pages are server-rendered: "load" is enough. Real GitLab/Magento render with XHR: wait for quiet.
        self.settle = settle or ("load" if helpers == "bundled" else "networkidle")
        self.nav_timeout_s, self.idle_cap_s = nav_timeout_s, idle_cap_s
        self.max_concurrency, self.html_unescape = max_concurrency, html_unescape
        self.live = live  # False: no browser; program checks are reported as needing a live page
        self.stats = {"scored": 0, "unscorable": 0, "errors": 0}
        self._loop: LoopThread | None = None
        self._pw: Any = None
        self._browser_obj: Any = None
        self._browser_lock: asyncio.Lock | None = None
        self._sem: asyncio.Semaphore | None = None
        # Contexts ready for the next episode, newest last: each a future of an `_Idle`, one being opened ahead or
        # one being wiped after its episode; None where the wipe failed (`_page_for`, `_give_back`).
        self._idle: list[asyncio.Future] = []
        self.stats.update(contexts_opened=0, contexts_reused=0)

    # -- the actor's loop and browser ---------------------------------------------------------------------------
    def _ensure_loop(self) -> LoopThread:
        if self._loop is None:
            self._loop = LoopThread("reward-actor")
        return self._loop

    async def _browser(self) -> Any:
        if self._browser_lock is None:
            self._browser_lock = asyncio.Lock()
        async with self._browser_lock:
            if self._browser_obj is None:
                from playwright.async_api import async_playwright

                self._pw = await async_playwright().start()
                self._browser_obj = await self._pw.chromium.launch(
                    executable_path=chromium_executable(), args=CHROMIUM_ARGS, headless=True
                )
        return self._browser_obj

    async def _new_page(self, allow: AllowList, storage_state: Any = None) -> tuple[Any, Any]:
        """A new context (with `storage_state`) and its page, able to reach only the run's sites: first requests
        are refused by the route, redirect hops and sub-resources inside Chromium (common/confine.py), as in the
        rollout browser."""
        browser = await self._browser()
        context = await browser.new_context(storage_state=storage_state or None, service_workers="block")
        self.stats["contexts_opened"] += 1
        try:
            await context.route(allow.block_regex(), lambda route: route.abort("blockedbyclient"))
            page = await context.new_page()
            await confine(await context.new_cdp_session(page), allow, skip=UNREAD_RESOURCES)
        except BaseException:
            await context.close()
            raise
        return context, page

    async def _ahead(self, allow: AllowList) -> _Idle:
        return (allow.block_regex().pattern, *await self._new_page(allow), False)

    async def _page_for(self, allow: AllowList, storage_state: Any) -> tuple[Any, Any]:
        """A context and page for one episode's checks. Opening one (a renderer process) costs more than most
        checks, so an idle one is taken when it fits (the same allow-list, and a storage state of cookies only,
        which are added to it; local storage is given only to a new context), and one is opened ahead whenever none
        is idle. One ahead, not two: on a 2-core machine two renderer start-ups competed with the check's own page
        load and each check took longer (bench/bench_reward_peer.py)."""
        key = allow.block_regex().pattern
        cookies = _cookies_only(storage_state)
        got = await self._take_idle(key) if cookies is not None else None
        if not self._idle:  # a concurrent check may have given one back while this one waited
            self._idle.append(asyncio.ensure_future(self._ahead(allow)))
        if got is None:
            return await self._new_page(allow, storage_state)
        context, page = got
        if cookies:
            await context.add_cookies(cookies)
        return context, page

    async def _take_idle(self, key: str) -> tuple[Any, Any] | None:
        """The newest idle context for the allow-list `key`; idle ones for another allow-list are closed."""
        while self._idle:
            try:
                got = await self._idle.pop()
            except Exception:  # noqa: BLE001 - one that failed to open: try the next, or open one
                continue
            if got is None:
                continue
            got_key, context, page, wiped = got
            if got_key == key and not page.is_closed():
                self.stats["contexts_reused"] += wiped
                return context, page
            await _close_quietly(context)
        return None

    async def _give_back(self, context: Any, page: Any, allow: AllowList) -> None:
        """An episode's context, done with: wiped for the next episode while it is idle, or closed when enough are
        idle already."""
        if len(self._idle) >= IDLE_CONTEXTS or page is None or page.is_closed():
            await _close_quietly(context)
            return
        self._idle.append(asyncio.ensure_future(self._wipe(context, page, allow)))

    async def _wipe(self, context: Any, page: Any, allow: AllowList) -> _Idle | None:
        """Leave nothing of an episode in its context: the page leaves for about:blank (its scripts stop), then
        every cookie and all storage of the run's origins (`Storage.clearDataForOrigin` "all": local and session
        storage, IndexedDB, cache storage) are cleared. None, with the context closed, when any step fails."""
        try:
            await page.goto("about:blank")
            await context.clear_cookies()
            cdp = await context.new_cdp_session(page)
            try:
                for origin in sorted(allow.origins):
                    await cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
            finally:
                await cdp.detach()
        except Exception:  # noqa: BLE001 - a context that cannot be wiped is not used again
            await _close_quietly(context)
            return None
        return allow.block_regex().pattern, context, page, True

    # -- scoring ------------------------------------------------------------------------------------------------
    def _storage_state(self, task: Task, final: FinalState) -> Any:
        if final.storage_state:
            return final.storage_state
        if self.auth_dir is not None and task.storage_state:
            path = self.auth_dir / Path(task.storage_state).name
            if path.exists():
                return str(path)
        return None

    async def _score(self, task: Task, final: FinalState) -> Reward:
        urls = {**self.env_urls, **final.env_urls}
        try:
            plan = build_plan(_filled(task))
        except PlanError as e:
            self.stats["errors"] += 1
            return Reward(score=None, error=str(e))
        session = None
        if plan.needs_page and self.live:
            # The run's sites; a caller that names none gets the origin of the episode's last page only.
            allow = AllowList(list(urls.values()) or [final.url])
            session = _Session(self, final, self._storage_state(task, final), allow)
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.max_concurrency)
        try:
            async with self._sem:
                reward = await self._run(plan, final, session, urls)
        except SandboxGone as e:  # even a failed string check must not score this episode 0
            self.stats["errors"] += 1
            reward = Reward(score=None, error=str(e))
        finally:
            if session is not None:
                await session.close()
        self.stats["scored"] += 1
        self.stats["unscorable"] += reward.score is None
        return reward

    async def _run(self, plan: Any, final: FinalState, session: Any, urls: dict[str, str]) -> Reward:
        return await run_plan(
            plan,
            final.answer,
            final.url,
            session,
            self.helpers,
            self.judge,
            urls,
            self.cfg.url_match,
            self.html_unescape,
            final.miniwob,
        )

    async def ascore(self, task: Task, final: FinalState) -> Reward:
        """`score` from any event loop: the work runs on the actor's own loop, where its browser lives."""
        return await asyncio.wrap_future(self._ensure_loop().submit(self._score(task, final)))

    def score(self, task: Task, final: FinalState) -> Reward:
        return self._ensure_loop().run(self._score(task, final))

    async def _score_many(self, items: list[tuple[Task, FinalState]]) -> list[Reward]:
        return list(await asyncio.gather(*(self._score(t, f) for t, f in items)))

    def score_many(self, items: list[tuple[Task, FinalState]]) -> list[Reward]:
        """Score many episodes concurrently; results in input order."""
        return self._ensure_loop().run(self._score_many(items))

    async def _shutdown(self) -> None:
        idle, self._idle = self._idle, []
        for future in idle:
            future.cancel()
            try:
                await future
            except BaseException:  # noqa: BLE001 - cancelled or failed: the browser's close takes it anyway
                pass
        if self._browser_obj is not None:
            await self._browser_obj.close()
        if self._pw is not None:
            await self._pw.stop()
        self._browser_obj = self._pw = None

    def close(self) -> None:
        if self._loop is not None:
            try:
                self._loop.run(self._shutdown())
            finally:
                self._loop.stop()
                self._loop = None

    def __enter__(self) -> RewardActor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
