"""Every MiniWoB++ expert solves its task in real Chromium through BrowserActor, scored by the page's reward.

A sample of held-out seeds: expert i plays test seed i mod 50, so each expert plays a different seed in one pass
(one browser, about a minute on 2 cores). `python -m sites.miniwob experts --seeds 20` reports the full rates.
"""

from __future__ import annotations

import pytest

from common import records as R
from common.config import BrowserConfig
from reward.checks import miniwob as miniwob_check
from sites.miniwob.experts import SOLVERS, MiniwobExpert, expert_for
from sites.miniwob.play import play
from sites.miniwob.server import MiniwobServer
from sites.miniwob.tasks import SEEDS, TASKS, load_split
from sites.tasks.steps import ExpertError

EXPERT_TASKS = [n for n in TASKS if n in SOLVERS]


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


def test_experts_cover_at_least_fifteen_listed_tasks():
    assert len(EXPERT_TASKS) >= 15
    assert set(SOLVERS) <= set(TASKS)  # no expert for a task outside the documented list


def _expert_failures(actor, server) -> list:
    """Expert i plays test seed i mod 50 through `actor`; the episodes it did not solve, with why."""
    failures = []
    for i, name in enumerate(EXPERT_TASKS):
        seed = SEEDS["test"][i % len(SEEDS["test"])]
        task = next(t for t in load_split("test", [name]) if t.miniwob.seed == seed).with_urls(
            {"miniwob": server.url}
        )
        check, reasons = play(actor, task, expert_for(task))
        if check.score != 1.0:
            failures.append((task.task_id, check.why, reasons))
    return failures


def test_every_expert_solves_a_held_out_seed(actor, server):
    failures = _expert_failures(actor, server)
    assert not failures, failures


def test_every_expert_solves_a_held_out_seed_with_ids_after_the_text(server):
    """browser.html_ids=after_text: the experts read `<tag> label [n]</tag>` as they read `<tag id="n">`
    (the seeds of the test above, so a failure here is the layout's)."""
    from browser_actors.actor import BrowserActor

    after = BrowserActor(
        BrowserConfig(step_timeout_s=15, settle_timeout_s=3, html_ids="after_text"),
        env_urls={"miniwob": server.url},
    )
    try:
        failures = _expert_failures(after, server)
    finally:
        after.close()
    assert not failures, failures


def test_expert_acts_only_on_ids_of_the_observation_and_stops_when_done(actor, server):
    task = load_split("test", ["click-checkboxes"])[0].with_urls({"miniwob": server.url})
    expert = expert_for(task)
    obs = actor.reset(task)
    while not obs.done:
        action, why = expert.next_action(obs)
        assert why and f'id="{action.element_id}"' in obs.text
        obs = actor.step(action)
    action, why = expert.next_action(obs)
    assert isinstance(action, R.Stop) and "reward" in why
    assert miniwob_check(actor.final_state().miniwob).score == 1.0


def test_expert_refuses_what_it_cannot_read(actor, server):
    task = load_split("test", ["enter-text"])[0].with_urls({"miniwob": server.url})
    actor.mode = "axtree"
    try:
        obs = actor.reset(task)
    finally:
        actor.mode = "html"
    with pytest.raises(ExpertError, match="simplified-HTML"):
        expert_for(task).next_action(obs)
    obs = actor.reset(task)
    expert = expert_for(task)
    expert.next_action(obs)
    with pytest.raises(ExpertError, match="previous action failed"):
        expert.next_action(obs.model_copy(update={"last_action_error": "there is no element with id [99]"}))
    assert expert_for(load_split("test", ["use-autocomplete"])[0]) is None  # a listed task without an expert


def test_option_experts_click_the_id_written_next_to_the_label():
    """With ids after the text the expert clicks the label (its id follows the words the instruction names; a
    click on a label toggles its control); with ids in the tag it clicks the input. Observations as the browser
    writes them for click-option."""
    tag = (
        '<label id="1"> <input id="2" type="radio" name="radio"> Red </label> '
        '<label id="3"> <input id="4" type="radio" name="radio"> Blue </label>\n<button id="5"> Submit </button>'
    )
    after = (
        '<label> <input id="2" type="radio" name="radio"> Red [1]</label> '
        '<label> <input id="4" type="radio" name="radio"> Blue [3]</label>\n<button> Submit [5]</button>'
    )
    for text, chosen in ((tag, "4"), (after, "3")):
        expert = MiniwobExpert("click-option", "Select Blue and click Submit.", SOLVERS["click-option"])
        action, _ = expert.next_action(R.Observation(text=text, url="http://miniwob.local/", mode="html"))
        assert action == R.Click(element_id=chosen)
        action, _ = expert.next_action(R.Observation(text=text, url="http://miniwob.local/", mode="html"))
        assert action == R.Click(element_id="5")
