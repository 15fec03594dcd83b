"""Browser-actor step time (action + next observation) against a fixed-sleep baseline measured in the same run.

The baseline is the paper's code's settle policy: the same BrowserActor, the same actions and the same
observation extraction, but after every action `page.wait_for_timeout(3000)` instead of our settle wait
(load state + network quiet + DOM mutation-quiet). Only the waiting differs, so the ratio is what the settle
policy buys. Pages: the local test fixtures and, when the sites package exists, the bundled shopping site.

Also MiniWoB++ resets (the 8 tasks of configs/miniwob_cpu.yaml, 3 test seeds each, rounds alternating): seconds and
CPU-seconds of every process of this bench (Chromium and its driver included) per reset, with the last episode's tab
reused (`browser.reuse_miniwob_tab`, the default) against a fresh context per episode.

    .venv/bin/python bench/bench_browser.py [--steps 20] [--baseline-steps 4] [--reset-rounds 2]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "browser_actors"), str(ROOT / "bench")]

from report import Figure, save  # noqa: E402

from browser_actors.actor import BrowserActor  # noqa: E402
from common import records as R  # noqa: E402
from common.config import BrowserConfig  # noqa: E402
from common.tasks import Task  # noqa: E402

FIXED_SLEEP_MS = 3000


class FixedSleepActor(BrowserActor):
    """The baseline: sleeps a fixed 3 s after each action, as WebAgent-R1's / WebArena's harness code does."""

    async def _settle(self, page: Any) -> None:
        await page.wait_for_timeout(FIXED_SLEEP_MS)


def _id(obs: R.Observation, html: str, axtree: str) -> str:
    """The element id matched by the pattern of the observation's mode (ids are the same in both modes)."""
    m = re.search(html if obs.mode == "html" else axtree, obs.text)
    if not m:
        raise RuntimeError(f"bench page changed: no match in the {obs.mode} observation:\n{obs.text[:1500]}")
    return m.group(1)


def fixture_steps(base: str) -> list:
    """A loop of steps over the fixture pages; each entry maps the current observation to an action."""
    return [
        lambda o: R.Click(
            element_id=_id(o, r'<button id="(\d+)"> Increment', r"\[(\d+)\] button 'Increment'")
        ),
        lambda o: R.Type(
            element_id=_id(o, r'<input id="(\d+)" name="q"', r"\[(\d+)\] textbox 'Query'"),
            text="laptop",
            press_enter=False,
        ),
        lambda o: R.Select(
            element_id=_id(o, r'<select id="(\d+)" name="color"', r"\[(\d+)\] combobox"), text="Blue"
        ),
        lambda o: R.Scroll(direction="down"),
        lambda o: R.Click(
            element_id=_id(
                o, r'<a id="(\d+)" href="/page2.html"> Second page', r"\[(\d+)\] link 'Second page'"
            )
        ),
        lambda o: R.Click(
            element_id=_id(o, r'<a id="(\d+)" href="/index.html"> Back home', r"\[(\d+)\] link 'Back home'")
        ),
    ]


def site_steps(urls: dict[str, str]) -> list:
    shop = urls["shopping"]
    product_html = r'<a id="(\d+)" href="/[a-z0-9-]+\.html"> [^<]*Camera'
    product_ax = r"\[(\d+)\] link '[^']*Camera[^']*' url: http://[^/]+/[a-z0-9-]+\.html"
    return [
        lambda o: R.Type(
            element_id=_id(o, r'<input id="(\d+)" name="q"', r"\[(\d+)\] (?:textbox|searchbox) 'Search"),
            text="camera",
        ),
        lambda o: R.Click(element_id=_id(o, product_html, product_ax)),
        lambda o: R.GoBack(),
        lambda o: R.Goto(url=f"{shop}/checkout/cart/"),
        lambda o: R.Goto(url=f"{shop}/"),
    ]


def run_steps(
    actor: BrowserActor, task: Task, steps: list, n: int, sandbox: str | None = None
) -> list[float]:
    obs = actor.reset(task, sandbox=sandbox)
    times = []
    for i in range(n):
        action = steps[i % len(steps)](obs)
        t0 = time.perf_counter()
        obs = actor.step(action)
        times.append(time.perf_counter() - t0)
        if obs.last_action_error or obs.infra_error:
            raise RuntimeError(f"step {i} {action}: {obs.last_action_error or obs.infra_error}")
        if i % len(steps) == len(steps) - 1:
            obs = actor.reset(task, sandbox=sandbox)  # the loop starts again from the start page
    return times


def compare(label: str, make_actor: Any, task: Task, steps: list, args: Any, sandbox: Any = None) -> Figure:
    results = {}
    for name, cls, n in (
        ("settle wait", BrowserActor, args.steps),
        ("fixed 3 s sleep", FixedSleepActor, args.baseline_steps),
    ):
        actor = make_actor(cls)
        try:
            run_steps(actor, task, steps, 2, sandbox() if sandbox else None)  # warm-up: browser, caches
            results[name] = run_steps(actor, task, steps, n, sandbox() if sandbox else None)
        finally:
            actor.close()
    ours, base = statistics.median(results["settle wait"]), statistics.median(results["fixed 3 s sleep"])
    print(f"{label}: median step (action + next observation) over {len(results['settle wait'])} steps")
    print(
        f"  ours (settle wait)        {ours * 1e3:8.1f} ms   p90 {_p90(results['settle wait']) * 1e3:8.1f} ms"
    )
    print(f"  baseline (fixed 3 s)      {base * 1e3:8.1f} ms   ({len(results['fixed 3 s sleep'])} steps)")
    print(f"  ratio                     {base / ours:8.1f}x faster than the fixed-sleep baseline")
    return Figure(
        f"{label}: step, settle wait / fixed 3 s sleep",
        f"{ours * 1e3:.0f} ms",
        f"{base * 1e3:.0f} ms",
        ours / base,
    )


def _cpu_seconds() -> float:
    """CPU-seconds (user + system) of this process and every live descendant (Chromium, Playwright's driver),
    with those of the descendants that exited and were reaped: a renderer closed with its context counts in the
    process that reaped it (its children_user / children_system), not nowhere."""
    import psutil

    total = 0.0
    for proc in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def miniwob_resets(rounds: int) -> list[Figure]:
    """Per MiniWoB++ reset: wall and CPU seconds with the tab reused against a fresh context (same tasks)."""
    from common.config import load_config
    from sites.miniwob.server import MiniwobServer
    from sites.miniwob.tasks import load_split

    names = load_config(str(ROOT / "configs" / "miniwob_cpu.yaml")).environment.miniwob_tasks
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    with MiniwobServer() as srv:
        tasks = [t.with_urls({"miniwob": srv.url}) for n in names for t in load_split("test", [n])[:3]]
        for _ in range(rounds):
            for reuse in (False, True):
                actor = BrowserActor(BrowserConfig(reuse_miniwob_tab=reuse), env_urls={"miniwob": srv.url})
                try:
                    actor.reset(tasks[-1])  # warm-up: the browser launch and the first context
                    c0, t0 = _cpu_seconds(), time.perf_counter()
                    for t in tasks:
                        actor.reset(t)
                    wall[reuse].append((time.perf_counter() - t0) / len(tasks))
                    cpu[reuse].append((_cpu_seconds() - c0) / len(tasks))
                finally:
                    actor.close()
    w = {k: statistics.median(v) for k, v in wall.items()}
    c = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"MiniWoB++ reset ({len(tasks)} tasks x {rounds} rounds), median of rounds:")
    print(f"  tab reused       {w[True] * 1e3:7.0f} ms   {c[True]:.3f} CPU-s")
    print(f"  fresh context    {w[False] * 1e3:7.0f} ms   {c[False]:.3f} CPU-s")
    return [
        Figure(
            "MiniWoB++ reset, seconds: tab reused / fresh context",
            f"{w[True]:.3f} s",
            f"{w[False]:.3f} s",
            w[True] / w[False],
        ),
        Figure(
            "MiniWoB++ reset, CPU-seconds (all processes): tab reused / fresh context",
            f"{c[True]:.3f} CPU-s",
            f"{c[False]:.3f} CPU-s",
            c[True] / c[False],
        ),
    ]


def _p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(len(xs) * 0.9) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=24, help="steps measured with our settle wait")
    ap.add_argument("--baseline-steps", type=int, default=4, help="steps measured with the 3 s sleep")
    ap.add_argument("--mode", choices=["html", "axtree"], default="html")
    ap.add_argument("--reset-rounds", type=int, default=2, help="MiniWoB++ reset rounds per arm (0 = skip)")
    args = ap.parse_args()
    cfg = BrowserConfig(observation=args.mode)

    from ba_fixture_server import FixtureServer

    with FixtureServer() as srv:
        task = Task(
            sites=[], task_id="bench", start_url=srv.url("index.html"), intent="x", eval={"eval_types": []}
        )
        figures = [
            compare(
                f"local fixture pages ({args.mode})",
                lambda cls: cls(cfg),
                task,
                fixture_steps(srv.base),
                args,
            )
        ]
    if args.reset_rounds > 0:
        figures += miniwob_resets(args.reset_rounds)
    try:
        from sites.server import SiteServer
    except ImportError:
        print("bundled sites: not available (sites.server missing)")
        save("browser", figures, {"mode": args.mode})
        return
    with tempfile.TemporaryDirectory() as tmp, SiteServer(base_port=0, data_dir=tmp) as sites:
        task = Task(
            sites=["shopping"],
            task_id="bench-shop",
            start_url=sites.urls["shopping"] + "/",
            require_login=True,
            storage_state="./.auth/shopping_state.json",
            intent="x",
            eval={"eval_types": []},
        )
        make = lambda cls: cls(cfg, auth_dir=str(sites.auth_dir), env_urls=sites.urls)  # noqa: E731
        figures.append(
            compare(
                f"bundled shopping site ({args.mode})",
                make,
                task,
                site_steps(sites.urls),
                args,
                sandbox=sites.new_sandbox,
            )
        )
    save("browser", figures, {"mode": args.mode})


if __name__ == "__main__":
    main()
