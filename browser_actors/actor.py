"""`BrowserActor`: one Chromium per actor, one isolated context per episode, ids on elements, hard step time-outs.

A MiniWoB++ episode that follows another on the same actor reuses the last one's emptied tab instead
(`browser.reuse_miniwob_tab`; those pages keep no login, sandbox or server state): a fresh context costs a new
renderer process, 1.6 CPU-seconds per reset here against 0.46 (bench/bench_browser.py), and halved the time of an
evaluation of 120 episodes on 2 cores.

    actor = BrowserActor(cfg.browser, auth_dir=".../.auth", env_urls={"shopping": "http://127.0.0.1:7770"})
    actor = BrowserActor(cfg.browser, local_sites={"miniwob": MiniwobServer})   # pages served by the actor itself
    obs = actor.reset(task, sandbox=token)           # start page, logged in, sandbox cookie set
    obs = actor.step(Click(element_id="12"))          # never raises for a bad id / action: see obs.last_action_error
    state = actor.final_state()                       # for the reward checks
    actor.close()

A plain class: `ray.remote(BrowserActor)` is applied where it is launched (rollout_workers). Unlike WebArena's
environment it neither sleeps after actions nor measures every node's bounding box: it waits for the page to settle
(settle.py) and reads the page in one script pass, so a step costs what the page costs. A step that overruns
`browser.step_timeout_s` (hung or crashed page) is abandoned, the page replaced, and `Observation.infra_error` set.
A MiniWoB++ task (`task.miniwob`) is seeded and started on its page at reset (browser_actors/miniwob.py); each
observation then carries `done` once the page has given its reward, and the final state carries that reward.
`local_sites` are served from the actor's own process on 127.0.0.1 (MiniWoB++'s static pages): a task's placeholder
for such a site is filled at reset, on the browser's node, so a browser on any machine of a cluster reaches them.
Each actor's server has its own port, so observations show such a site at one origin, `http://<site>.local`, and a
`goto` there reaches the actor's own server: the model never sees which actor (or port) played an episode, so a
group's G first pages are one prompt (vLLM computes it once, and so does the learner: `learner.share_prompts`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from browser_actors import miniwob as MW
from browser_actors import start_state as E
from browser_actors.context import EpisodeContext
from browser_actors.executor import Executor
from browser_actors.observation import build
from browser_actors.safety import AllowList, Guard
from browser_actors.settle import settle
from common import records as R
from common.chromium import CHROMIUM_ARGS, chromium_executable
from common.config import BrowserConfig
from common.loop import LoopThread
from common.net import origin
from common.sites import site_key
from common.tasks import Task
from common.text import cut

_ACTION_CLASSES = get_args(get_args(R.Action)[0])


class BrowserActor:
    def __init__(
        self,
        cfg: Any = None,
        *,
        auth_dir: str | None = None,
        env_urls: dict[str, str] | None = None,
        output_dir: str | None = None,
        headless: bool = True,
        local_sites: dict[str, Callable[[], Any]] | None = None,
    ):
        """`local_sites`: site key -> a server class (or factory) whose instances have `start() -> base URL` and
        `stop()`; each is started here, on 127.0.0.1 of this actor's machine, and stopped by `close()`."""
        cfg = cfg.browser if hasattr(cfg, "browser") else cfg  # a whole TrainConfig is accepted too
        self.cfg: BrowserConfig = cfg or BrowserConfig()
        self.auth_dir, self.env_urls, self.headless = auth_dir, dict(env_urls or {}), headless
        self._servers: list[Any] = []
        self.local_urls = self._start_local_sites(local_sites or {})
        # what observations show for each served origin (and what a `goto` may name instead of it)
        self.shown = {url.rstrip("/"): f"http://{key}.local" for key, url in self.local_urls.items()}
        self.env_urls.update(self.local_urls)
        self.output_dir = Path(output_dir) if output_dir else None
        self.mode = self.cfg.observation  # may be switched between steps ("html" | "axtree")
        self.guard = Guard(self.cfg.blocked_patterns)
        self._lock = threading.Lock()
        self._loop = LoopThread("browser-actor")
        self._pw: Any = None
        self._browser: Any = None
        self._ep: EpisodeContext | None = None
        self._page: Any = None
        self._new_episode(None, "")

    def _start_local_sites(self, sites: dict[str, Callable[[], Any]]) -> dict[str, str]:
        given = {site_key(k) for k in self.env_urls}
        if clash := [k for k in sites if site_key(k) in given]:
            raise ValueError(f"site(s) {clash} are given both in env_urls and in local_sites: give each once")
        urls = {}
        for key, make in sites.items():
            server = make()
            urls[key] = server.start()
            self._servers.append(server)
        return urls

    def _new_episode(self, sandbox: str | None, episode_id: str) -> None:
        self._sandbox, self._episode_id = sandbox, episode_id
        self._step_idx, self._answer, self._last_good_url = 0, None, "about:blank"
        self._sites: dict[str, str] = {}
        self._allow = AllowList([])
        self._tracing = False
        self._miniwob: tuple[Any, str] | None = None  # (MiniwobSpec, instruction) of a MiniWoB++ episode

    # ---- public, synchronous API -------------------------------------------------------------------------
    def reset(self, task: Task, sandbox: str | None = None, episode_id: str | None = None) -> R.Observation:
        """Open the task's start page(s) in a fresh context (logged in, sandbox cookie set); the first observation.
        Raises for bad input: placeholders left in the start URL, a start URL off the allow-list, a missing
        storage-state file."""
        with self._lock:
            limit = self.cfg.step_timeout_s * 3 + 60
            return self._loop.run(self._reset(task, sandbox, episode_id), timeout=limit)

    def step(self, action: R.Action) -> R.Observation:
        """Execute an `Action`; never raises for a bad element id or an action the page refuses (the error is
        `last_action_error` of the next observation). Anything but an `Action` is a `TypeError`: callers parse
        model output (`common.actions.parse_action`) before they step."""
        if not isinstance(action, _ACTION_CLASSES):
            raise TypeError(
                f"BrowserActor.step takes an Action, got {type(action).__name__}: {action!r:.200}"
            )
        with self._lock:
            return self._loop.run(self._step(action), timeout=self.cfg.step_timeout_s * 3 + 30)

    def final_state(self) -> R.FinalState:
        with self._lock:
            return self._loop.run(self._final_state(), timeout=60)

    def observe(self) -> R.Observation:
        """The current observation again, without acting."""
        with self._lock:
            return self._loop.run(self._guarded_observe(None), timeout=self.cfg.step_timeout_s * 2 + 30)

    def close(self) -> None:
        with self._lock:
            try:
                self._loop.run(self._shutdown(), timeout=60)
            finally:
                self._loop.stop()
                for server in self._servers:
                    server.stop()
                self._servers = []

    @property
    def page(self) -> Any:
        """The active Playwright page (async API, lives on this actor's loop: use `call` to run code on it)."""
        return self._page

    def call(self, fn: Any, timeout: float = 60.0) -> Any:
        """Run `await fn(page)` on the actor's loop (for reward checks in the same process); returns its result."""
        with self._lock:
            return self._loop.run(asyncio.wait_for(fn(self._page), timeout), timeout=timeout + 5)

    # ---- browser and episode lifecycle -------------------------------------------------------------------
    async def _ensure_browser(self) -> Any:
        if self._browser is None or not self._browser.is_connected():
            from playwright.async_api import async_playwright

            if self._pw is None:
                self._pw = await async_playwright().start()
            self._browser = await self._pw.chromium.launch(
                executable_path=chromium_executable(), headless=self.headless, args=CHROMIUM_ARGS
            )
        return self._browser

    async def _open_context(self, storage_state: Any) -> EpisodeContext:
        ep = EpisodeContext(self._allow, self.guard)
        cookies = []
        if self._sandbox:
            cookies = E.sandbox_cookies(self._sandbox, [*self._sites.values(), self._last_good_url])
        await ep.open(await self._ensure_browser(), storage_state, cookies, self.cfg.settle_timeout_s)
        self._ep = ep
        return ep

    async def _reset(self, task: Task, sandbox: str | None, episode_id: str | None) -> R.Observation:
        # the sites this actor serves: their placeholders resolve here, on the browser's node
        if self.local_urls:
            task = task.with_urls(self.local_urls)
        E.check_filled(task)
        state = E.storage_state_path(task, self.auth_dir)
        tab = await self._reusable_tab(task, sandbox, state)
        if tab is None:
            await self._end_episode()
        self._new_episode(sandbox, episode_id or str(task.task_id))
        self._sites = E.site_urls(task, self.env_urls)
        self._allow = AllowList(E.allowed_urls(task, self.env_urls))
        urls = E.start_urls(task)
        for u in urls:
            if why := self._allow.check(u):
                raise ValueError(f"task {task.task_id}: start URL {u} is not allowed: {why}")
        self._last_good_url = urls[0] if urls else "about:blank"
        if tab is not None:
            ep, pages = self._ep, [tab]
        else:
            ep = await self._open_context(str(state) if state else None)
            if self._episode_dir() and self.cfg.traces:
                await ep.context.tracing.start(screenshots=True, snapshots=True)
                self._tracing = True
            pages = [await ep.context.new_page() for _ in urls or ["about:blank"]]
            for p in pages:
                await ep.confine(p)
        errors = []
        for p, u in zip(pages, urls, strict=False):
            try:
                await asyncio.wait_for(p.goto(u, wait_until="commit"), self.cfg.step_timeout_s)
            except Exception as e:  # noqa: BLE001 - reported in the observation, the episode can still act
                errors.append(f"could not open {u}: {e}".splitlines()[0])
            # the start page is the first history entry: go_back must not reach blank
            await _forget_history(ep, p)
        self._page = pages[0]
        await self._page.bring_to_front()
        if task.miniwob is not None:  # seed and start the page's episode before the first observation
            utterance = await MW.start(self._page, task.miniwob, self.cfg.step_timeout_s)
            MW.check_intent(task.task_id, task.intent, utterance)
            self._miniwob = (task.miniwob, utterance)
        ep.begin_step()
        return await self._guarded(self._after_action("; ".join(errors) or None), "reset")

    async def _reusable_tab(self, task: Task, sandbox: str | None, state: Path | None) -> Any:
        """The last episode's tab, emptied for `task`, when `browser.reuse_miniwob_tab` lets a MiniWoB++ episode
        follow another on the same sites; else None (the caller opens a fresh context). MiniWoB++ pages have no
        login, sandbox or server state, and what a page leaves in the browser is removed here: the other tabs
        are closed, the origin's storage (local storage, IndexedDB, caches, cookies) is cleared through CDP, the
        tab's session storage and every cookie of the context too; the next page load replaces the document and
        its scripts, and the history is reset after it as on every reset. What this saves is a new context and a
        new renderer process per episode (bench/bench_browser.py, its MiniWoB++ reset figure)."""
        ep, page = self._ep, self._page
        urls = E.start_urls(task)
        if not (
            self.cfg.reuse_miniwob_tab
            and task.miniwob is not None
            and self._miniwob is not None  # the last episode was a MiniWoB++ one too
            and sandbox is None
            and state is None
            and not self.cfg.traces
            and len(urls) == 1
            and ep is not None
            and page is not None
            and not page.is_closed()
            and page not in ep.crashed
            and E.site_urls(task, self.env_urls) == self._sites
            and ep.allow.check(urls[0]) is None  # the context's routes and the tab's confinement allow it
        ):
            return None
        try:
            for other in [p for p in ep.pages if p is not page]:
                await asyncio.wait_for(other.close(run_before_unload=False), 5)
                ep.forget(other)
            await asyncio.wait_for(page.evaluate("() => { try { sessionStorage.clear(); } catch (e) {} }"), 5)
            if served := origin(page.url):
                cdp = await ep.cdp_for(page)
                await cdp.send("Storage.clearDataForOrigin", {"origin": served, "storageTypes": "all"})
            await ep.context.clear_cookies()
        except Exception:  # noqa: BLE001 - a tab that will not empty is not reused: a fresh context follows
            return None
        return page

    async def _end_episode(self) -> None:
        if self._ep is None:
            return
        if self._tracing:
            try:
                await self._ep.context.tracing.stop(path=str(self._episode_dir() / "trace.zip"))
            except Exception:  # noqa: BLE001 - a lost trace must not fail the next episode
                pass
            self._tracing = False
        if not await self._ep.close():  # a context that cannot close takes the browser with it
            await self._close_browser()
        self._ep, self._page = None, None

    async def _close_browser(self) -> None:
        try:
            if self._browser is not None:
                await asyncio.wait_for(self._browser.close(), 15)
        except Exception:  # noqa: BLE001 - the next episode launches a new one
            pass
        self._browser = None

    async def _shutdown(self) -> None:
        await self._end_episode()
        await self._close_browser()
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None

    # ---- steps ---------------------------------------------------------------------------------------------
    async def _step(self, action: R.Action) -> R.Observation:
        if self._ep is None:
            raise RuntimeError("BrowserActor.step called before reset()")
        self._step_idx += 1
        self._ep.begin_step()
        if isinstance(action, R.Stop):
            self._answer = action.answer
        if self._page.is_closed() or self._page in self._ep.crashed:
            await self._replace_page()
            return await self._guarded_observe("the page had crashed and was reloaded", infra="page crashed")
        return await self._guarded(self._act(action), f"step ({action.type})")

    def _show(self, text: str | None) -> str | None:
        """`text` with each served origin replaced by the origin observations show for it."""
        for real, shown in self.shown.items():
            text = text.replace(real, shown) if text else text
        return text

    async def _act(self, action: Any) -> R.Observation:
        if isinstance(action, R.Goto):  # a shown origin leads to this actor's own server
            for real, shown in self.shown.items():
                if action.url.startswith(shown):
                    action = action.model_copy(update={"url": real + action.url[len(shown) :]})
        executor = Executor(self._allow, self.guard, self.cfg.settle_timeout_s * 1000)
        self._page, error = await executor.run(action, self._page)
        return await self._after_action(error)

    async def _settle(self, page: Any) -> None:
        await settle(
            page, self._ep.trackers.get(page), self.cfg.settle_timeout_s, since=self._ep.step_started
        )

    async def _after_action(self, error: str | None) -> R.Observation:
        """Settle, adopt or refuse pop-ups, undo navigation that escaped the allow-list, then observe."""
        ep = self._ep
        await self._settle(self._page)
        await ep.wait_for_popups(self.cfg.settle_timeout_s)
        for popup in [p for p in ep.popups if p is not self._page and not p.is_closed()]:
            if ep.refused(popup) or popup.url == "about:blank":
                await popup.close()
                continue
            await self._settle(popup)
            self._page = popup  # a pop-up the page opened becomes the active tab, as in a real browser
            await popup.bring_to_front()
        messages = [error] if error else []
        messages += [m for _, m in ep.blocked]
        why = self._allow.check(self._page.url)
        if why or self._page in ep.escaped:  # a redirect (not seen by routes) or a script left the hosts
            if why:
                messages.append(f"navigation to {cut(self._page.url, 200)} blocked: {why}")
            await self._page.goto(self._last_good_url, wait_until="commit")
            await self._settle(self._page)
        obs = await self._observe("; ".join(dict.fromkeys(messages)) or None)
        self._last_good_url = self._page.url
        return obs

    async def _observe(self, error: str | None, infra: str | None = None) -> R.Observation:
        page = self._page
        cdp = await self._ep.cdp_for(page) if self.mode == "axtree" else None
        obs = await build(
            page,
            cdp,
            self._ep.pages,
            mode=self.mode,
            max_chars=self.cfg.page_max_chars,
            error=error,
            links=self.cfg.html_links,
            ids=self.cfg.html_ids,
        )
        obs.infra_error = infra
        if self.shown:
            obs.url, obs.short = self._show(obs.url), self._show(obs.short)
            obs.text, obs.last_action_error = self._show(obs.text), self._show(obs.last_action_error)
        if self._miniwob is not None:
            obs.done = (await MW.read(page, *self._miniwob)).done
        if self.cfg.screenshots and self._episode_dir():
            path = self._episode_dir() / f"step_{self._step_idx:03d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(path), timeout=self.cfg.settle_timeout_s * 1000)
            obs.screenshot = str(path)
        return obs

    # ---- failures: time-outs, crashes ------------------------------------------------------------------------
    async def _guarded(self, coro: Any, what: str) -> R.Observation:
        """Run a step under the step time-out; a hung or crashed page is replaced and reported as infra_error."""
        from playwright.async_api import Error as PlaywrightError

        try:
            return await asyncio.wait_for(coro, self.cfg.step_timeout_s)
        except asyncio.TimeoutError:
            infra = f"{what} exceeded the step time-out of {self.cfg.step_timeout_s:g} s (page hung)"
        except PlaywrightError as e:
            infra = f"{what} failed: the page crashed or closed ({cut(str(e).splitlines()[0], 200)})"
        await self._replace_page()
        error = f"the action did not complete: {infra}; the page was reloaded"
        return await self._guarded_observe(error, infra)

    async def _guarded_observe(self, error: str | None, infra: str | None = None) -> R.Observation:
        try:
            return await asyncio.wait_for(self._observe(error, infra), self.cfg.step_timeout_s)
        except Exception as e:  # noqa: BLE001 - the reloaded page is bad too: show a blank tab, keep the episode
            infra = (
                infra
                or f"observation failed: {cut(str(e).splitlines()[0], 200) if str(e) else type(e).__name__}"
            )
            await self._replace_page(url="about:blank")
            return await asyncio.wait_for(self._observe(error or infra, infra), self.cfg.step_timeout_s)

    async def _replace_page(self, url: str | None = None) -> None:
        """Close the active page (or, when even that hangs, rebuild the context from its cookies) and reopen."""
        old, url, ep = self._page, url or self._last_good_url, self._ep
        try:
            await asyncio.wait_for(old.close(run_before_unload=False), 10)
            ep.forget(old)
        except Exception:  # noqa: BLE001 - the renderer does not answer: the context goes, cookies are kept
            cookies = []
            try:
                cookies = await asyncio.wait_for(ep.context.cookies(), 5)
            except Exception:  # noqa: BLE001 - cookies of a dead browser are lost; the login state is reloaded
                pass
            await self._end_episode()
            ep = await self._open_context({"cookies": cookies, "origins": []})
        self._page = await ep.context.new_page()
        await ep.confine(self._page)
        try:
            await asyncio.wait_for(
                self._page.goto(url, wait_until="domcontentloaded"), self.cfg.settle_timeout_s
            )
        except Exception:  # noqa: BLE001 - a page that will not load again is left blank
            pass

    async def _final_state(self) -> R.FinalState:
        if self._ep is None:
            raise RuntimeError("BrowserActor.final_state called before reset()")
        ctx = self._ep.context
        try:
            storage = await asyncio.wait_for(ctx.storage_state(), 15)
        except Exception:  # noqa: BLE001 - localStorage of a hung page is unreadable; cookies are what checks use
            storage = {"cookies": await ctx.cookies(), "origins": []}
        return R.FinalState(
            url=self._page.url,
            tabs=[p.url for p in ctx.pages],
            storage_state=storage,
            sandbox=self._sandbox,
            answer=self._answer,
            env_urls=self._sites,
            miniwob=await MW.read(self._page, *self._miniwob) if self._miniwob else None,
        )

    def _episode_dir(self) -> Path | None:
        if self.output_dir is None or not (self.cfg.screenshots or self.cfg.traces):
            return None
        return self.output_dir / (self._episode_id or "episode")


async def _forget_history(ep: EpisodeContext, page: Any) -> None:
    """Drop `page`'s history, on the CDP session the episode keeps for the page (its confinement's)."""
    try:
        await (await ep.cdp_for(page)).send("Page.resetNavigationHistory")
    except Exception:  # noqa: BLE001 - only the go_back edge case depends on it
        pass
