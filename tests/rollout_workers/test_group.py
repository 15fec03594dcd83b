"""The rollout layer with small local parts (no Ray, no browser): groups, retries, sandboxes, scoring, ordering.

The browser, policy, sandboxes and reward actor here are tiny local classes with the real call signatures, so the
group logic itself is what is tested; faults (a crashing step, a dead sandbox endpoint, a dead reward actor) are
injected on purpose.
"""

from __future__ import annotations

import asyncio

from common.config import load_config
from common.records import FinalState, Observation, Reward, Trajectory, TrajectoryGroup, Turn
from common.tasks import Task
from rollout_workers.group import BrowserPool, RolloutWorker
from rollout_workers.metrics import summarize
from rollout_workers.policy import Reply


def _task(task_id: int = 1) -> Task:
    return Task(
        task_id=task_id,
        intent_template_id=task_id // 1000,
        sites=["shopping"],
        start_url="http://127.0.0.1:1/",
        intent="find it",
        eval={"eval_types": ["string_match"], "reference_answers": {"exact_match": "x"}},
    )


class Browser:
    def __init__(self, crash_on_step: bool = False, delay: float = 0.0):
        self.crash_on_step, self.delay, self.resets = crash_on_step, delay, []

    async def reset(self, task, sandbox=None, episode_id=None):
        self.resets.append(sandbox)
        await asyncio.sleep(self.delay)
        return Observation(text='<button id="1"> Go </button>', url=task.start_url)

    async def step(self, action):
        if self.crash_on_step:
            raise RuntimeError("browser process died")
        return Observation(text="<p> done </p>", url="http://127.0.0.1:1/done")

    async def final_state(self):
        return FinalState(url="http://127.0.0.1:1/done")


class Builder:
    """Prompt ids: one id per character of the observation (enough to exercise the context check)."""

    grammar, thinking = "webarena", False

    def build(self, intent, history, obs):
        return [1] * (len(obs.text) + 30 * len(history))

    def visible(self, obs, history=()):
        return obs

    def decode(self, ids):
        return ""


class Policy:
    source = "policy"

    def __init__(self, replies):
        self.replies, self.ended = list(replies), []

    async def act(self, episode_id, task, prompt_ids, obs, max_tokens):
        text = self.replies[min(len(self.replies) - 1, int(episode_id.split("#")[1]))]
        return Reply(completion_ids=[5, 6], logprobs=[-0.1, -0.1], text=text)

    def end(self, episode_id):
        self.ended.append(episode_id)


class Sandboxes:
    def __init__(self, fail_first: int = 0):
        self.made, self.dropped, self.fail_first = [], [], fail_first

    async def new(self):
        if self.fail_first:
            self.fail_first -= 1
            raise ConnectionError("sandbox endpoint not answering")
        self.made.append(f"sb{len(self.made)}")
        return self.made[-1]

    async def drop(self, token):
        self.dropped.append(token)


class Rewarder:
    def __init__(self, dead: bool = False):
        self.dead, self.scored = dead, 0

    async def ascore(self, task, final):
        if self.dead:
            raise RuntimeError("reward actor died")
        self.scored += 1
        return Reward(score=1.0 if final.answer == "x" else 0.0)


def _worker(browsers, rewarders=None, sandboxes=None, overrides=()):
    cfg = load_config(
        None,
        [
            f"browser.num_browsers={len(browsers)}",
            f"rl.group_size={len(browsers)}",
            "scheduling.group_retries=2",
            "scheduling.retry_backoff_s=0.01",
            *overrides,
        ],
    )
    made = {"n": 0}

    def factory(i):
        made["n"] += 1
        return browsers[i] if made["n"] <= len(browsers) else Browser()  # a replacement is a healthy actor

    pool = BrowserPool(factory, len(browsers))
    worker = RolloutWorker(pool, None, rewarders or [Rewarder()], Builder(), cfg, sandboxes or Sandboxes())
    return worker, pool


def test_a_failed_episode_reruns_the_whole_group_with_the_actor_replaced():
    sandboxes = Sandboxes()
    worker, pool = _worker([Browser(), Browser(crash_on_step=True)], sandboxes=sandboxes)
    policy = Policy(["```click [1]```", "```click [1]```"])
    group = asyncio.run(worker.run_group(_task(), 2, policy=policy))
    assert not group.failed and pool.replaced == 1 and worker.infra_failures == 1
    assert all(t.meta["attempts"] == 2 for t in group.trajectories)
    # every sandbox of both attempts is dropped, and every episode released its policy state
    assert sorted(sandboxes.dropped) == sorted(sandboxes.made) and len(sandboxes.made) == 4
    assert len(policy.ended) == 4


def test_a_group_is_never_returned_half_failed():
    worker, _ = _worker([Browser(crash_on_step=True), Browser()], overrides=["scheduling.group_retries=0"])
    worker.pool._factory = lambda i: Browser(crash_on_step=True)
    group = asyncio.run(worker.run_group(_task(), 2, policy=Policy(["```click [1]```"])))
    assert group.failed and all(t.reward is None for t in group.trajectories)  # failed groups are not scored


def test_a_context_overflow_ends_the_episode_with_its_reason():
    worker, _ = _worker([Browser()], overrides=["model.max_context=50", "inference.max_new_tokens=16"])
    group = asyncio.run(worker.run_group(_task(), 1, policy=Policy(["```click [1]```"])))
    t = group.trajectories[0]
    assert t.termination == "max_turns" and t.meta["context_overflow"] and len(t.turns) == 1


def test_a_dead_sandbox_endpoint_is_an_infrastructure_failure_of_the_group_and_retried():
    sandboxes = Sandboxes(fail_first=1)
    worker, _ = _worker([Browser()], sandboxes=sandboxes)
    group = asyncio.run(worker.run_group(_task(), 1, policy=Policy(["```stop [x]```"])))
    assert not group.failed and group.trajectories[0].reward == 1.0 and worker.infra_failures == 1
    sandboxes.fail_first = 10  # the endpoint stays down: a failed group comes back, no exception
    group = asyncio.run(worker.run_group(_task(), 1, policy=Policy(["```stop [x]```"])))
    assert group.failed and "sandbox endpoint" in group.trajectories[0].failure


def test_a_dead_reward_actor_passes_episodes_to_the_next_one_and_none_left_is_unscorable():
    alive, dead = Rewarder(), Rewarder(dead=True)
    worker, _ = _worker([Browser(), Browser()], rewarders=[dead, alive])
    group = asyncio.run(worker.run_group(_task(), 2, policy=Policy(["```stop [x]```"])))
    assert [t.reward for t in group.trajectories] == [1.0, 1.0] and alive.scored == 2
    worker, _ = _worker([Browser()], rewarders=[Rewarder(dead=True)])
    group = asyncio.run(worker.run_group(_task(), 1, policy=Policy(["```stop [x]```"])))
    t = group.trajectories[0]
    assert t.reward is None and "every reward actor failed" in t.meta["reward_error"]


def test_groups_come_back_in_completion_order_under_the_inflight_bound():
    browsers = [Browser(delay=0.3), Browser(delay=0.0), Browser(delay=0.0)]
    worker, pool = _worker(browsers, overrides=["scheduling.max_inflight_groups=2"])
    pool._factory = lambda i: browsers[i]
    seen, live, peak = [], {"n": 0}, {"n": 0}
    inner = worker.run_group

    async def counted(task, n, **kw):
        live["n"] += 1
        peak["n"] = max(peak["n"], live["n"])
        try:
            return await inner(task, n, **kw)
        finally:
            live["n"] -= 1

    worker.run_group = counted

    async def run():
        async for g in worker.run_groups(
            [_task(1), _task(2), _task(3)], 1, policy=Policy(["```stop [x]```"])
        ):
            seen.append(g.task_id)

    asyncio.run(run())
    # browser 0 (slow) holds task 1; tasks 2 and 3 finish first on the fast ones; never more than 2 in flight
    assert seen[-1] == 1 and sorted(seen) == [1, 2, 3] and peak["n"] == 2


class Scripted(Policy):
    """Replies in turn order (the same script for every episode)."""

    def __init__(self, replies):
        super().__init__(replies)
        self.turn: dict[str, int] = {}

    async def act(self, episode_id, task, prompt_ids, obs, max_tokens):
        k = self.turn[episode_id] = self.turn.get(episode_id, -1) + 1
        return Reply(
            completion_ids=[5, 6], logprobs=[-0.1, -0.1], text=self.replies[min(k, len(self.replies) - 1)]
        )


def test_replies_without_an_action_end_the_episode_only_when_they_come_in_a_row():
    worker, _ = _worker([Browser()], overrides=["scheduling.max_bad_replies=2", "scheduling.max_turns=8"])
    group = asyncio.run(worker.run_group(_task(), 1, policy=Scripted(["I think", "maybe"])))
    t = group.trajectories[0]
    # scored like any failed attempt (0), not an infrastructure failure; both unparseable turns are kept as data
    assert t.termination == "bad_replies" and len(t.turns) == 2 and t.reward == 0.0 and not group.failed
    assert all(x.parse_error for x in t.turns)
    mixed = Scripted(["hm", "```click [1]```", "hm", "```click [1]```", "hm", "hm", "```stop [x]```"])
    t = asyncio.run(worker.run_group(_task(), 1, policy=mixed)).trajectories[0]
    assert t.termination == "bad_replies" and len(t.turns) == 6
    worker, _ = _worker(
        [Browser()], overrides=["scheduling.max_turns=4"]
    )  # 0 = never: the turn budget ends it
    t = asyncio.run(worker.run_group(_task(), 1, policy=Scripted(["hm"]))).trajectories[0]
    assert t.termination == "max_turns" and len(t.turns) == 4


def test_an_engine_failure_reruns_the_group_without_replacing_browsers():
    from rollout_workers.router import EngineDown

    class Flaky(Policy):
        async def act(self, episode_id, task, prompt_ids, obs, max_tokens):
            if not self.ended:  # the first attempt: the engine dies under it
                raise EngineDown("engine 0 died: RayActorError")
            return await super().act(episode_id, task, prompt_ids, obs, max_tokens)

    worker, pool = _worker([Browser()])
    group = asyncio.run(worker.run_group(_task(), 1, policy=Flaky(["```stop [x]```"])))
    t = group.trajectories[0]
    assert not group.failed and t.reward == 1.0 and t.meta["attempts"] == 2 and worker.infra_failures == 1
    assert pool.replaced == 0


def test_a_turn_budget_sweep_evaluates_the_same_tasks_per_budget_and_plots_them(tmp_path, monkeypatch):
    from rollout_workers import evaluate as ev

    worker, _ = _worker([Browser(), Browser()], overrides=["eval.max_tasks=0"])
    script = ["```click [1]```", "```click [1]```", "```click [1]```", "```stop [x]```"]

    def sampling_policy(*a, **k):
        return Scripted(script)

    import rollout_workers.group as group_mod

    monkeypatch.setattr(group_mod, "ModelPolicy", sampling_policy)
    tasks = [_task(1001), _task(2001)]
    rows, groups = asyncio.run(ev.turn_sweep(worker, tasks, worker.cfg, [2, 4, 8], progress=False))
    assert [r["turns"] for r in rows] == [2, 4, 8]
    assert [r["success"] for r in rows] == [0.0, 1.0, 1.0]  # the script needs 4 turns
    assert [r["turns_per_episode"] for r in rows] == [2.0, 4.0, 4.0]
    assert all(
        sorted(t.task_id for g in groups[b] for t in g.trajectories) == [1001, 2001] for b in (2, 4, 8)
    )
    ev.plot_turn_sweep(rows, tmp_path / "sweep.png", title="t")
    assert (tmp_path / "sweep.png").stat().st_size > 1000


def test_an_all_failed_group_gets_one_expert_member_whose_prompts_equal_the_models():
    """Expert guidance through the real worker and episode loop: the expert member sees the prompt ids the model's
    members saw, its reply is tokenized by the run's builder, and its success makes the group trainable."""
    from common.actions import Stop
    from learner.collect import collect
    from learner.curriculum import TaskSampler
    from rollout_workers.policy import ExpertPolicy

    class Script:
        def next_action(self, obs):
            return Stop(answer="x"), "the answer is on the page"

    class ExpertBuilder(Builder):
        def encode_completion(self, text):
            return [7] * len(text)

    model = Policy(["```stop [y]```"])  # every model member answers wrong: the group is all-failed

    class Worker(RolloutWorker):
        async def run_group(self, task, group_size, *, policy=None, **kw):
            return await super().run_group(task, group_size, policy=policy or model, **kw)

    cfg = load_config(
        None,
        [
            "browser.num_browsers=3",
            "rl.group_size=2",
            "rl.tasks_per_iteration=1",
            "rl.dynamic_sampling=true",
            "rl.max_groups_per_iteration=1",
            "rl.expert_guidance=true",
        ],
    )
    builder = ExpertBuilder()
    worker = Worker(BrowserPool(lambda i: Browser(), 3), None, [Rewarder()], builder, cfg, Sandboxes())
    expert = ExpertPolicy(builder, "webarena", False, style="bare", scripts=lambda task, obs: Script())
    draws = asyncio.run(collect(worker, TaskSampler([_task(7)], cfg.rl), cfg, 0, expert=expert))
    (group,) = draws.groups
    members = group.trajectories
    assert [t.source for t in members] == ["policy", "policy", "expert"] and [t.reward for t in members] == [
        0,
        0,
        1,
    ]
    assert members[2].turns[0].prompt_ids == members[0].turns[0].prompt_ids == members[1].turns[0].prompt_ids
    assert members[2].turns[0].completion_text == "```stop [x]```" and members[2].turns[0].logprobs == []
    assert draws.train == [group] and (draws.expert_members, draws.expert_solved) == (1, 1)


def test_evaluate_samples_a_split_but_max_tasks_0_plays_every_task(monkeypatch):
    """`evaluate --seeds` passes max_tasks=0: every given (task, seed) is played, whatever eval.max_tasks says."""
    from rollout_workers import evaluate as ev

    worker, _ = _worker([Browser(), Browser()], overrides=["eval.max_tasks=1"])
    import rollout_workers.group as group_mod

    monkeypatch.setattr(group_mod, "ModelPolicy", lambda *a, **k: Scripted(["```stop [x]```"]))
    tasks = [_task(1001), _task(2001)]
    _, sampled = asyncio.run(ev.evaluate(worker, tasks, worker.cfg, progress=False))
    _, every = asyncio.run(ev.evaluate(worker, tasks, worker.cfg, progress=False, max_tasks=0))
    assert len(sampled) == 1
    assert sorted(t.task_id for g in every for t in g.trajectories) == [1001, 2001]


def test_an_episode_times_its_reset_final_state_and_score_and_the_summary_averages_them():
    class SlowRewarder(Rewarder):
        async def ascore(self, task, final):
            await asyncio.sleep(0.05)
            return await super().ascore(task, final)

    worker, _ = _worker([Browser(delay=0.1), Browser(delay=0.1)], rewarders=[SlowRewarder()])
    group = asyncio.run(worker.run_group(_task(), 2, policy=Policy(["```click [1]```"])))
    for t in group.trajectories:
        assert set(t.timings) == {"reset", "final_state", "score"}
        assert t.timings["reset"] >= 0.1 and t.timings["score"] >= 0.05
    stages = summarize([group]).episode_seconds
    assert stages["reset"] >= 0.1 and stages["score"] >= 0.05 and "generate" in stages and "step" in stages


def test_stage_seconds_sum_a_stage_over_turns_average_over_episodes_and_skip_failed_ones():
    def turn(generate, step):
        return Turn(index=0, observation=Observation(text=""), timings={"generate": generate, "step": step})

    played = [
        Trajectory(task_id=1, turns=[turn(1.0, 0.5), turn(2.0, 0.5)], timings={"reset": 3.0, "score": 1.0}),
        Trajectory(task_id=2, sample_idx=1, turns=[turn(1.0, 0.0)], timings={"reset": 1.0}),
    ]
    broken = Trajectory(task_id=3, failure="browser died", timings={"reset": 100.0})
    stages = summarize([TrajectoryGroup(task_id=1, trajectories=[*played, broken])]).episode_seconds
    # generate: (1 + 2) and 1 -> 2.0; step: 1.0 and 0.0 -> 0.5; score only where it was timed
    assert stages == {"reset": 2.0, "generate": 2.0, "step": 0.5, "score": 1.0}
