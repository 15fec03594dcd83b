"""Shared fixtures: the local fixture server, one BrowserActor per module, and a task maker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ba_fixture_server import FixtureServer

from common.config import BrowserConfig
from common.tasks import Task


@pytest.fixture(scope="session")
def server() -> Iterator[FixtureServer]:
    with FixtureServer() as s:
        yield s


def make_task(url: str, task_id: str = "t", sites: list[str] | None = None, **extra: object) -> Task:
    return Task(
        sites=sites or [], task_id=task_id, start_url=url, intent="test", eval={"eval_types": []}, **extra
    )


def fast_cfg(**over: object) -> BrowserConfig:
    base = {"step_timeout_s": 8.0, "settle_timeout_s": 3.0}
    base.update(over)
    return BrowserConfig(**base)


@pytest.fixture(scope="module")
def actor() -> Iterator[object]:
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg())
    yield a
    a.close()
