"""MiniWoB++ episodes in real Chromium through BrowserActor: seeding, both observation modes, the page's reward
scored by the reward actor, a do-nothing pass over every listed task, and the guards around the episode.

One server and one browser serve the whole module (about a minute on 2 cores).
"""

from __future__ import annotations

import re

import httpx
import pytest

from common import records as R
from common.config import BrowserConfig
from common.tasks import Task
from reward import RewardActor
from sites.miniwob.server import MiniwobServer
from sites.miniwob.tasks import SEEDS, TASKS, load_split
from sites.tasks.steps import parse_elements


@pytest.fixture(scope="module")
def server():
    with MiniwobServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def actor(server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(
        BrowserConfig(step_timeout_s=15, settle_timeout_s=3),
        env_urls={"miniwob": server.url},
    )
    yield a
    a.close()


@pytest.fixture(scope="module")
def rewarder():
    with RewardActor(live=False) as r:  # the miniwob check reads the final state only: no browser needed
        yield r


def task(server, name: str, split: str = "test", k: int = 0) -> Task:
    return load_split(split, [name])[k].with_urls({"miniwob": server.url})


def button(obs: R.Observation, label: str) -> str:
    return next(e.id for e in parse_elements(obs.text) if e.tag == "button" and e.text == label)


def test_server_serves_the_package_pages_as_utf8_and_lists_no_folders(server):
    page = httpx.get(server.task_url("unicode-test"))
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert "core.startEpisode" in page.text
    assert httpx.get(f"{server.url}/core/core.js").status_code == 200
    assert httpx.get(f"{server.url}/miniwob/").status_code == 404


def test_actor_serves_the_pages_itself_and_fills_the_task_on_its_own_node(server, rewarder, actor):
    """What a browser node of a cluster does: the task arrives with __MINIWOB__ unfilled, the actor fills it with
    the server it runs on 127.0.0.1, confines the episode to that origin, and the page's reward is scored."""
    from browser_actors.actor import BrowserActor

    t = load_split("test", ["click-button"])[1]
    assert t.start_url.startswith("__MINIWOB__/")
    a = BrowserActor(
        BrowserConfig(step_timeout_s=15, settle_timeout_s=3), local_sites={"miniwob": MiniwobServer}
    )
    own = a.local_urls["miniwob"]
    try:
        assert own.startswith("http://127.0.0.1:") and own != server.url and a.env_urls == {"miniwob": own}
        obs = a.reset(t)
        # shown at the site's one origin, whichever actor (port) serves it: equal pages, equal prompts
        assert obs.url == "http://miniwob.local/miniwob/click-button.html" and own not in obs.short
        actor.mode = a.mode
        first = actor.reset(task(server, "click-button", k=1))
        assert (first.text, first.title) == (obs.text, obs.title) and first.url.startswith(server.url)
        label = re.search(r'"(.*)"', t.intent).group(1)
        blocked = a.step(R.Goto(url=server.task_url("click-button")))  # the same pages on another origin
        assert "not in the allow-list" in blocked.last_action_error and blocked.url == obs.url
        again = a.step(R.Goto(url=obs.url))  # the shown origin leads to the actor's own server
        assert not again.last_action_error and again.url == obs.url
        obs = a.step(R.Click(element_id=button(a.reset(t), label)))
        final = a.final_state()
        assert obs.done and final.env_urls == {"miniwob": own} and final.url.startswith(own)
        reward = rewarder.score(t, final)
        assert reward.score == 1.0 and "page reward 1 > 0" in reward.checks[0].why
    finally:
        a.close()
    with pytest.raises(httpx.ConnectError):  # the actor's server ended with it
        httpx.get(f"{own}/core/core.js")


def test_unfilled_task_needs_a_serving_actor_and_a_site_is_given_once(actor, server):
    with pytest.raises(ValueError, match="still holds __MINIWOB__.*local_sites"):
        actor.reset(load_split("test", ["click-button"])[0])  # this actor only knows a URL from its caller
    from browser_actors.actor import BrowserActor

    with pytest.raises(ValueError, match="given both in env_urls and in local_sites"):
        BrowserActor(env_urls={"miniwob": server.url}, local_sites={"miniwob": MiniwobServer})


def test_html_episode_success_is_the_pages_reward(actor, rewarder, server):
    actor.mode = "html"
    t = task(server, "click-button")
    obs = actor.reset(t)
    label = re.search(r'"(.*)"', t.intent).group(1)
    assert not obs.done and t.intent not in obs.text  # the instruction comes with the task, not the page
    obs = actor.step(R.Click(element_id=button(obs, label)))
    final = actor.final_state()
    assert obs.done and final.miniwob.done and final.miniwob.raw_reward == 1.0
    assert 0 < final.miniwob.reward <= 1.0  # the page's time-penalised reward is kept too
    reward = rewarder.score(t, final)
    assert reward.score == 1.0 and [c.type for c in reward.checks] == ["miniwob"]
    assert "page reward 1 > 0" in reward.checks[0].why


def test_html_episode_wrong_click_scores_zero_and_stays_finished(actor, rewarder, server):
    actor.mode = "html"
    t = task(server, "click-test-2", k=1)  # two buttons, ONE and TWO
    obs = actor.reset(t)
    label = re.search(r"Click button (\w+)", t.intent).group(1)
    wrong = next(e for e in parse_elements(obs.text) if e.tag == "button" and e.text != label)
    obs = actor.step(R.Click(element_id=wrong.id))
    assert obs.done
    # the finished page starts no new episode: the right button now changes nothing
    actor.step(R.Click(element_id=button(obs, label)))
    final = actor.final_state()
    assert final.miniwob.raw_reward == -1.0
    reward = rewarder.score(t, final)
    assert reward.score == 0.0 and "<= 0" in reward.checks[0].why


def test_axtree_episode_gives_ids_in_the_task_area(actor, rewarder, server):
    actor.mode = "axtree"
    try:
        t = task(server, "click-checkboxes-large", k=2)
        obs = actor.reset(t)
        assert obs.mode == "axtree"
        wanted = re.search(r"Select (.*) and click Submit", t.intent).group(1).split(", ")
        boxes = dict(re.findall(r"\[(\d+)\] checkbox '([^']*)'", obs.text))
        boxes = {name: i for i, name in boxes.items()}
        assert set(wanted) <= set(boxes), obs.text
        for name in wanted:
            obs = actor.step(R.Click(element_id=boxes[name]))
            assert obs.last_action_error is None
        submit = re.search(r"\[(\d+)\] button 'Submit'", obs.text).group(1)
        obs = actor.step(R.Click(element_id=submit))
        assert obs.done
        assert rewarder.score(t, actor.final_state()).score == 1.0
    finally:
        actor.mode = "html"


def test_same_seed_same_problem_and_instruction_checked(actor, server):
    t = task(server, "click-checkboxes", k=3)
    first = actor.reset(t).text
    assert actor.reset(t).text == first
    assert actor.final_state().miniwob.utterance == t.intent
    wrong = t.model_copy(update={"intent": "Select nothing and click Submit."})
    with pytest.raises(ValueError, match="differs from the page's instruction"):
        actor.reset(wrong)


def test_a_miniwob_episode_after_another_reuses_the_tab_and_keeps_nothing_of_the_last_one(actor, server):
    """`browser.reuse_miniwob_tab` (on by default): the next episode loads in the last one's tab, not in a fresh
    context; the other tabs are closed and the local storage, session storage and cookies the last page left are
    gone. Its first observation is the one a fresh context shows, and with the switch off every reset gets a new
    context."""
    from browser_actors.actor import BrowserActor

    first, second = task(server, "click-button", k=0), task(server, "click-tab", k=1)
    actor.mode = "html"
    actor.reset(first)
    tab = actor.page

    async def leave_traces(page):
        async with page.context.expect_page() as opened:  # the second tab exists once this returns
            await page.evaluate(
                """() => { localStorage.setItem('k', '1'); sessionStorage.setItem('k', '1');
                           document.cookie = 'k=1; path=/'; window.open(location.href); }"""
            )
        await (await opened.value).wait_for_load_state("domcontentloaded")

    async def traces(page):
        return await page.evaluate("() => [localStorage.length, sessionStorage.length, document.cookie]")

    actor.call(leave_traces)
    assert actor.call(traces) == [1, 1, "k=1"]
    assert len(actor.final_state().tabs) == 2
    obs = actor.reset(second)
    assert actor.page is tab
    assert actor.call(traces) == [0, 0, ""]
    final = actor.final_state()
    assert final.tabs == [server.task_url("click-tab")] and final.storage_state["cookies"] == []
    fresh = BrowserActor(
        BrowserConfig(step_timeout_s=15, settle_timeout_s=3, reuse_miniwob_tab=False),
        env_urls={"miniwob": server.url},
    )
    try:
        assert fresh.reset(second).text == obs.text
        before = fresh.page
        fresh.reset(first)
        assert fresh.page is not before
    finally:
        fresh.close()


def test_reloaded_page_loses_the_seeded_episode(actor, rewarder, server):
    t = task(server, "click-test")
    actor.reset(t)
    obs = actor.step(R.Goto(url=server.task_url("click-test")))  # a fresh, unseeded page of the same task
    start = next(e.id for e in parse_elements(obs.text) if e.text == "START")  # the page's own START cover
    obs = actor.step(R.Click(element_id=start))
    obs = actor.step(R.Click(element_id=button(obs, "Click Me!")))  # solves the unseeded episode
    final = actor.final_state()
    assert not obs.done and not final.miniwob.started
    reward = rewarder.score(t, final)
    assert reward.score == 0.0 and "seeded episode is gone" in reward.checks[0].why


def test_do_nothing_scores_zero_on_every_listed_task(actor, rewarder, server):
    """Reset, then the final state at once: no listed task pays a reward for doing nothing."""
    actor.mode = "html"
    seed = SEEDS["test"][-1]
    tasks = [t.with_urls({"miniwob": server.url}) for t in load_split("test") if t.miniwob.seed == seed]
    assert len(tasks) == len(TASKS) >= 40
    bad = []
    for t in tasks:
        obs = actor.reset(t)
        final = actor.final_state()
        reward = rewarder.score(t, final)
        if (
            obs.done
            or not final.miniwob.started
            or reward.score != 0.0
            or re.search(r'id="\d+"', obs.text) is None
        ):
            bad.append((t.task_id, reward.checks[0].why if reward.checks else reward.error, obs.text[:80]))
    assert not bad, bad
