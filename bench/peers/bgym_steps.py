"""Peer driver, run inside .venv-peers (BrowserGym 0.14.3, playwright 1.44): times BrowserGym's environment step
on a page sequence given as JSON and prints the timings as JSON. Imports nothing of this project.

    .venv-peers/bin/python bench/peers/bgym_steps.py < spec.json > result.json

spec: {"start_url", "storage_state" (path or null), "cookies" (Playwright cookie dicts), "steps" (see
bench/walk.py), "loops", "slow_mo" (ms or null = the task's default), "pre_observation_delay" (s or null = the
env's default), "chromium"}. A step's time is `env.step(action)` plus flattening the accessibility tree to text
(what an agent reads); the first loop is a warm-up and not reported. BrowserGym's action errors (e.g. its 500 ms
click time-out firing while a navigation it started is still loading) are returned, with the URL after each step,
so the caller can check that the walk still went where it should.
"""

from __future__ import annotations

import json
import re
import sys
import time

from browsergym.core.env import BrowserEnv
from browsergym.core.task import OpenEndedTask
from browsergym.utils.obs import flatten_axtree_to_str


class StartPageTask(OpenEndedTask):
    """BrowserGym's open-ended task (go to a URL, never done), plus the episode's sandbox cookies; its waits
    (slow_mo) are the task's unless the spec overrides them."""

    cookies: list = []

    def setup(self, page):
        if self.cookies:
            page.context.add_cookies(self.cookies)
        return super().setup(page)


def action_for(step: dict, text: str, base: str) -> str:
    op = step["op"]
    if op == "goto":
        return f"goto({base + step['path']!r})"
    if op == "back":
        return "go_back()"
    if op == "scroll":
        return "scroll(0, 600)"
    m = re.search(r"\[([^\]\s]+)\] " + re.escape(f"{step['role']} '{step['name']}'"), text)
    if not m:
        raise RuntimeError(f"step {step}: no match in BrowserGym's axtree:\n{text[:1500]}")
    if op == "click":
        return f"click({m.group(1)!r})"
    if op == "fill":
        return f"fill({m.group(1)!r}, {step['text']!r})"
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    spec = json.load(sys.stdin)
    StartPageTask.cookies = spec["cookies"]
    kwargs = (
        {"pre_observation_delay": spec["pre_observation_delay"]}
        if spec["pre_observation_delay"] is not None
        else {}
    )
    env = BrowserEnv(
        task_entrypoint=StartPageTask,
        task_kwargs={"start_url": spec["start_url"], "goal": "bench"},
        slow_mo=spec["slow_mo"],
        headless=True,
        pw_chromium_kwargs={"executable_path": spec["chromium"]},
        pw_context_kwargs={"storage_state": spec["storage_state"]} if spec["storage_state"] else {},
        **kwargs,
    )
    base = spec["start_url"].split("/", 3)
    base = "/".join(base[:3])
    times, chars, errors, urls = [], [], [], []
    try:
        for loop in range(spec["loops"]):
            obs, _ = env.reset(seed=0)
            text = flatten_axtree_to_str(obs["axtree_object"])
            for step in spec["steps"]:
                action = action_for(step, text, base)
                t0 = time.perf_counter()
                obs, *_ = env.step(action)
                text = flatten_axtree_to_str(obs["axtree_object"])
                dt = time.perf_counter() - t0
                if obs["last_action_error"]:
                    errors.append(f"{action}: {obs['last_action_error']}")
                if loop > 0:
                    times.append(dt)
                    chars.append(len(text))
                    urls.append(obs["url"])
    finally:
        env.close()
    json.dump({"step_s": times, "obs_chars": chars, "errors": errors, "urls": urls}, sys.stdout)


if __name__ == "__main__":
    main()
