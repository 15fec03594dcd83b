"""Peer driver, run inside .venv-peers: opens `n` BrowserGym environments on a start page and holds them until a
line arrives on stdin, so the caller can measure the memory of this process tree. Imports nothing of this project.

    .venv-peers/bin/python bench/peers/bgym_hold.py < spec.json     # prints "ready" when the envs are open

spec (the first stdin line, JSON): {"start_url", "storage_state", "cookies", "chromium", "n"}.
"""

from __future__ import annotations

import json
import sys

from bgym_steps import StartPageTask
from browsergym.core.env import BrowserEnv


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    StartPageTask.cookies = spec["cookies"]
    envs = []
    try:
        for _ in range(spec["n"]):
            env = BrowserEnv(
                task_entrypoint=StartPageTask,
                task_kwargs={"start_url": spec["start_url"], "goal": "bench"},
                headless=True,
                slow_mo=0,
                pre_observation_delay=0.0,
                pw_chromium_kwargs={"executable_path": spec["chromium"]},
                pw_context_kwargs={"storage_state": spec["storage_state"]} if spec["storage_state"] else {},
            )
            env.reset(seed=0)
            env.step("scroll(0, 600)")
            envs.append(env)
        print("ready", flush=True)
        sys.stdin.readline()
    finally:
        for env in envs:
            env.close()


if __name__ == "__main__":
    main()
