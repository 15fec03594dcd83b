"""Sandboxes the agent cannot touch (issue 12, item 9), on a real site server, a real agent browser and the real
reward actor.

The fault, as the issue found it: an agent submits the sites' own "Open a new sandbox" form again and again; with
a small sandbox bound that used to evict another rollout's sandbox, which then answered 403 and scored 0.
"""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from common import records as R
from common.config import BrowserConfig
from common.records import FinalState
from common.tasks import Task
from rollout_workers.sandbox import SandboxClient
from sites.core import SANDBOX_COOKIE, SANDBOX_KEY_HEADER


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    from sites.server import SiteServer

    with SiteServer(
        base_port=0,
        data_dir=tmp_path_factory.mktemp("sites"),
        sites=["shopping", "shopping_admin"],
        max_sandboxes=2,
    ) as srv:
        yield srv


def _task(start: str, urls: dict[str, str], **eval_spec) -> Task:
    task = Task(
        sites=["shopping"],
        task_id="sandbox-guard",
        start_url=start,
        intent="Open sandboxes",
        eval={"eval_types": [], **eval_spec},
    )
    return task.with_urls(urls)  # filled where it is made, as the driver does when it loads tasks


def _status(shop, token: str) -> int:
    return httpx.get(shop.urls["shopping"] + "/", cookies={SANDBOX_COOKIE: token}).status_code


def test_the_agent_cannot_open_sandboxes_and_cannot_evict_another_rollouts(shop):
    from browser_actors.actor import BrowserActor

    mine, victim = shop.new_sandbox(), shop.new_sandbox()  # the bound (2) is reached
    agent = BrowserActor(BrowserConfig(step_timeout_s=10, settle_timeout_s=3), env_urls=shop.urls)
    try:
        obs = agent.reset(_task("__SHOPPING__/__sandbox__", shop.urls), sandbox=mine)
        for _ in range(4):  # the four posts
            button = re.search(r'<button id="(\d+)"[^>]*> Open a new sandbox', obs.text).group(1)
            refused = agent.step(R.Click(element_id=button))
            assert "sandbox admin key required" in refused.text
            obs = agent.step(R.Goto(url=shop.urls["shopping"] + "/__sandbox__"))
        cookies = {c["name"]: c["value"] for c in agent.final_state().storage_state["cookies"]}
        assert cookies[SANDBOX_COOKIE] == mine  # still in its own sandbox
    finally:
        agent.close()
    assert sorted(shop.store.tokens()) == sorted([mine, victim])
    assert _status(shop, victim) == 200 and _status(shop, mine) == 200
    r = httpx.post(shop.urls["shopping"] + "/__sandbox__")
    assert r.status_code == 403 and SANDBOX_KEY_HEADER in r.json()["error"]
    r = httpx.delete(f"{shop.urls['shopping']}/__sandbox__/{victim}", headers={SANDBOX_KEY_HEADER: "guess"})
    assert r.status_code == 403 and shop.store.exists(victim)
    for t in (mine, victim):
        shop.drop_sandbox(t)


def test_a_full_store_refuses_the_driver_instead_of_evicting_a_leased_sandbox(shop):
    async def run() -> None:
        client = SandboxClient(shop.urls["shopping"], key=shop.sandbox_key)
        a, b = await client.new(), await client.new()
        with pytest.raises(httpx.HTTPStatusError) as err:
            await client.new()
        assert (
            err.value.response.status_code == 503 and "all 2 sandboxes are in use" in err.value.response.text
        )
        assert _status(shop, a) == 200 and _status(shop, b) == 200
        await client.drop(a)
        assert _status(shop, a) == 403
        await client.drop(await client.new())  # room again
        await client.drop(b)
        with pytest.raises(httpx.HTTPStatusError, match="403"):
            await SandboxClient(shop.urls["shopping"], key="not-the-key").new()

    asyncio.run(run())


def test_an_episode_whose_sandbox_is_gone_is_unscorable_not_zero(shop):
    from reward.actor import RewardActor

    token = shop.new_sandbox()
    shop.drop_sandbox(token)  # as an eviction or an early drop would leave it
    task = _task(
        "__SHOPPING__/",
        shop.urls,
        eval_types=["string_match", "program_html"],
        reference_answers={"exact_match": "something else"},  # a 0 here must not decide the reward
        program_html=[
            {
                "url": "__SHOPPING__/checkout/cart/",
                "locator": "",
                "required_contents": {"must_include": ["x"]},
            }
        ],
    )
    final = FinalState(url=shop.urls["shopping"] + "/", sandbox=token, answer="wrong", env_urls=shop.urls)
    with RewardActor(env_urls=shop.urls, helpers="bundled") as rewarder:
        reward = rewarder.score(task, final)
        assert reward.score is None and "is gone" in reward.error
        live = shop.new_sandbox()  # the same task on a live sandbox scores normally (0: wrong answer)
        assert rewarder.score(task, final.model_copy(update={"sandbox": live})).score == 0.0
        shop.drop_sandbox(live)
