"""RewardActor: scores finished episodes with WebArena-Lite's checks; Ray wraps it where it is launched.

    actor = RewardActor(cfg.reward, env_urls=srv.urls, helpers="bundled")
    reward = actor.score(task, final_state)                 # sync; the task's placeholders are filled already
    rewards = actor.score_many([(task, final), ...])        # concurrently, results in order
    reward = await actor.ascore(task, final)                # from any event loop
    ray.remote(RewardActor).options(name="reward-0").remote(cfg.reward, env_urls=...)   # on a cluster

Checks that visit pages run in the actor's own Chromium (one browser per actor, launched on first need), in a
fresh context per episode carrying the episode's storage state (login) and `wa_sandbox` cookie, so it sees exactly
the data the episode wrote. That context reaches only the run's sites (`env_urls`): requests, redirect hops and
sub-resources elsewhere are refused before they are sent. Contexts are cheap, so many episodes are scored at once (bounded by `max_concurrency`).
The browser lives on the actor's private event-loop thread; `ascore` forwards to it from whatever loop calls it.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from pathlib import Path
from typing import Any

from common.allowlist import AllowList
from common.chromium import CHROMIUM_ARGS, chromium_executable
from common.config import RewardConfig
from common.confine import OffList, checked_get, confine
from common.loop import LoopThread
from common.records import FinalState, Reward
from common.sites import SANDBOX_COOKIE
from common.tasks import PLACEHOLDERS, Task
from common.text import cut
from reward.evaluate import NavigationError, SandboxGone, run_plan
from reward.funcs import make_helpers
from reward.judge import Judge, make_judge
from reward.plan import PlanError, build_plan

SANDBOX_MISSING_HEADER = "x-wa-sandbox-missing"  # sites/core.py sets it on the 403 for a token that is gone


class _Session:
    """One episode's page and cookies; navigation waits for the load state (and network idle when asked)."""

    def __init__(self, actor: RewardActor, final: FinalState, storage_state: Any, allow: AllowList) -> None:
        self.actor, self.final, self.storage_state, self.allow = actor, final, storage_state, allow
        self.current_url = final.url
        self._page: Any = None
        self._context: Any = None

    async def _ensure_context(self) -> Any:
        if self._context is None:
            browser = await self.actor._browser()
            self._context = await browser.new_context(
                storage_state=self.storage_state or None, service_workers="block"
            )
            # Checks may open only the run's sites: first requests are refused by the route, redirect hops and
            # sub-resources inside Chromium (common/confine.py), as in the rollout browser.
            await self._context.route(self.allow.block_regex(), lambda route: route.abort("blockedbyclient"))
            if self.final.sandbox:
                origins = {_origin(u) for u in self.final.env_urls.values() or self.actor.env_urls.values()}
                await self._context.add_cookies(
                    [
                        {"name": SANDBOX_COOKIE, "value": self.final.sandbox, "url": o}
                        for o in sorted(origins)
                        if o
                    ]
                )
        return self._context

    async def page(self) -> Any:
        if self._page is None:
            context = await self._ensure_context()
            page = await context.new_page()
            await confine(await context.new_cdp_session(page), self.allow)
            self._page = page
            if self.current_url and self.current_url != "about:blank":
                await self.goto(self.current_url)
        return self._page

    async def goto(self, url: str) -> None:
        from playwright.async_api import Error as PwError
        from playwright.async_api import TimeoutError as PwTimeout

        page = self._page or await self.page()
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
        self.current_url = page.url

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
        if self._context is not None:
            await self._context.close()


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


def _origin(url: str) -> str:
    p = urllib.parse.urlparse(url)
    return f"{p.scheme}://{p.netloc}" if p.scheme and p.netloc else ""


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
