"""Browser actors: one isolated Playwright Chromium per actor, observations with element ids, WebArena's actions.

    actor.py        BrowserActor: reset(task) -> Observation, step(action) -> Observation, final_state()
    start_state.py  what an episode starts from: start URLs, reachable sites, login state, sandbox cookie
    context.py      one episode's browser context: its tabs and what happened in them during a step
    executor.py     one Action on the active tab
    observation.py  observation text: simplified HTML with ids (dom.js), the accessibility tree (axtree.py)
    axtree.py       the accessibility-tree observation
    settle.py       waiting for a page to settle, without fixed sleeps
    safety.py       the high-impact-action guard and goto targets
    miniwob.py      MiniWoB++ episodes on a task page
    cli.py          `python -m browser_actors observe URL` (with __main__.py)

`BrowserActor` is imported lazily so that `import browser_actors` does not pull in Playwright.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BrowserActor"]


def __getattr__(name: str) -> Any:
    if name == "BrowserActor":
        from browser_actors.actor import BrowserActor

        return BrowserActor
    raise AttributeError(name)
