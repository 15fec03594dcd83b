"""Browser actors: one isolated Playwright Chromium per actor, observations with element ids, WebArena's actions.

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
