"""One RL iteration's draws (learner/collect.py): dynamic sampling, expert guidance, the same draws after a resume.

The worker here is a scripted environment: each task's outcome is fixed by its id (as MiniWoB++ seeds fix theirs),
so the draws can be checked exactly. The episode loop itself is exercised with real browsers in the smoke tests.
"""

from __future__ import annotations

import asyncio
import json

from common.config import RLConfig, TrainConfig
from common.records import Trajectory, TrajectoryGroup
from common.tasks import Task
from learner.collect import collect
from learner.curriculum import TaskSampler


def _tasks(n: int) -> list[Task]:
    return [
        Task(
            task_id=i,
            intent_template_id=i % 3,
            sites=["miniwob"],
            start_url="http://127.0.0.1:1/",
            intent=f"task {i}",
            eval={"eval_types": ["miniwob"]},
        )
        for i in range(n)
    ]


class ScriptedWorker:
    """Groups whose rewards are decided by the task id: id % 4 == 0 mixed, 1 all solved, 2 and 3 all failed; an
    expert member succeeds on tasks with id % 4 == 2 only. Records every run it was asked for."""

    def __init__(self, parallel: int = 2) -> None:
        self.parallel, self.runs = parallel, []

    def parallel_groups(self, group_size: int) -> int:
        return self.parallel

    async def run_group(
        self, task: Task, group_size: int, *, iteration: int = 0, policy=None
    ) -> TrajectoryGroup:
        self.runs.append((task.task_id, "expert" if policy is not None else "policy"))
        await asyncio.sleep(0.001 * (task.task_id % 3))  # uneven finishing order
        k = task.task_id % 4
        if policy is not None:
            rewards, source = [1.0 if k == 2 else 0.0], "expert"
        else:
            rewards, source = (
                ([1.0, 0.0] + [0.0] * (group_size - 2)) if k == 0 else [float(k == 1)] * group_size,
                "policy",
            )
        trajs = [
            Trajectory(task_id=task.task_id, sample_idx=i, reward=r, source=source)
            for i, r in enumerate(rewards)
        ]
        return TrajectoryGroup(task_id=task.task_id, trajectories=trajs, iteration=iteration)


def _cfg(**rl) -> TrainConfig:
    return TrainConfig(rl=RLConfig(group_size=4, **rl))


def test_dynamic_sampling_stops_at_k_mixed_groups_and_never_trains_a_group_twice():
    cfg = _cfg(dynamic_sampling=True, tasks_per_iteration=3, max_groups_per_iteration=40)
    sampler = TaskSampler(_tasks(40), cfg.rl, seed=0)
    worker = ScriptedWorker(parallel=2)
    draws = asyncio.run(collect(worker, sampler, cfg, 0))
    mixed = [g for g in draws.groups if g.task_id % 4 == 0]
    assert 3 <= len(draws.train) <= 3 + worker.parallel - 1  # groups in flight at the target finish and count
    assert all(g.task_id % 4 == 0 for g in draws.train) and len(draws.train) == len(mixed)
    assert len({g.task_id for g in draws.groups}) == len(draws.groups) == draws.drawn  # each task drawn once
    assert (
        draws.to_json()["dropped"]
        == draws.drawn - len(draws.train)
        == sum(v for k, v in draws.outcomes.items() if k != "mixed")
    )
    # the cap holds when mixed groups are rare
    capped = asyncio.run(
        collect(
            ScriptedWorker(),
            TaskSampler(_tasks(40), cfg.rl, seed=0),
            _cfg(dynamic_sampling=True, tasks_per_iteration=30, max_groups_per_iteration=7),
            0,
        )
    )
    assert capped.drawn == 7 and len(capped.train) < 30


def test_without_dynamic_sampling_every_drawn_group_is_trained():
    cfg = _cfg(tasks_per_iteration=5)
    draws = asyncio.run(collect(ScriptedWorker(), TaskSampler(_tasks(40), cfg.rl, seed=0), cfg, 0))
    assert draws.drawn == len(draws.train) == 5


def test_an_all_failed_group_gets_exactly_one_expert_member():
    cfg = _cfg(
        dynamic_sampling=True, tasks_per_iteration=4, max_groups_per_iteration=12, expert_guidance=True
    )
    worker = ScriptedWorker()
    draws = asyncio.run(
        collect(
            worker, TaskSampler(_tasks(40), cfg.rl, seed=0), cfg, 0, expert=object(), guided_templates={0, 1}
        )
    )
    failed = [g for g in draws.groups if g.task_id % 4 in (2, 3)]
    guided = [g for g in failed if g.task_id % 3 in (0, 1)]  # templates the expert may guide
    assert failed and draws.expert_members == len(guided)
    for g in draws.groups:
        experts = [t for t in g.trajectories if t.source == "expert"]
        assert len(experts) == (1 if g in guided else 0)
        if experts:
            assert experts[0].sample_idx == 4 and experts[0].meta["expert_guidance"]
    # a guided group the expert solved is mixed and trained; the policy's record of it stays all-failed
    solved = [g for g in guided if g.task_id % 4 == 2]
    assert draws.expert_solved == len(solved) and all(g in draws.train for g in solved)
    # each guided group's expert ran once (in the order its policy members finished, which the load can change)
    assert sorted(n for n, who in worker.runs if who == "expert") == sorted(g.task_id for g in guided)


def test_guide_up_to_also_guides_rarely_solved_groups_never_solved_ones():
    """rl.guide_up_to: a mixed group of 4 with one success (share 0.25) gets the expert member at 0.25 and above,
    not at 0.2; an all-solved group never does, whatever the threshold."""
    for up_to, mixed_guided in ((0.2, False), (0.25, True), (1.0, True)):
        cfg = _cfg(
            dynamic_sampling=True,
            tasks_per_iteration=4,
            max_groups_per_iteration=12,
            expert_guidance=True,
            guide_up_to=up_to,
        )
        draws = asyncio.run(
            collect(ScriptedWorker(), TaskSampler(_tasks(40), cfg.rl, seed=0), cfg, 0, expert=object())
        )
        for g in draws.groups:
            experts = [t for t in g.trajectories if t.source == "expert"]
            kind = g.task_id % 4
            want = {0: mixed_guided, 1: False, 2: True, 3: True}[kind]
            assert len(experts) == int(want), (up_to, g.task_id)
        assert draws.expert_members == sum(
            1 for g in draws.groups if g.task_id % 4 in ((0, 2, 3) if mixed_guided else (2, 3))
        )


def test_a_resumed_run_draws_the_same_groups():
    cfg = _cfg(
        dynamic_sampling=True,
        tasks_per_iteration=2,
        max_groups_per_iteration=10,
        rest_iterations=1,
        curriculum="mixed",
    )
    tasks = _tasks(30)

    def run(sampler: TaskSampler, iterations: range) -> list[list]:
        return [
            [
                g.task_id
                for g in sorted(
                    asyncio.run(collect(ScriptedWorker(1), sampler, cfg, it)).groups, key=lambda g: g.task_id
                )
            ]
            for it in iterations
        ]

    whole = TaskSampler(tasks, cfg.rl, seed=3)
    first = run(whole, range(2))
    saved = json.loads(json.dumps(whole.state()))  # what the checkpoint after iteration 1 holds
    rest = run(whole, range(2, 5))
    resumed = TaskSampler(tasks, cfg.rl, seed=3)
    resumed.restore(saved)
    assert run(resumed, range(2, 5)) == rest and first != rest


class TemplatedWorker(ScriptedWorker):
    """ScriptedWorker whose episodes record their template, as rollout_workers/group.py does."""

    async def run_group(self, task: Task, group_size: int, *, iteration: int = 0, policy=None):
        group = await super().run_group(task, group_size, iteration=iteration, policy=policy)
        for t in group.trajectories:
            t.meta["template"] = task.intent_template_id
        return group


def test_template_baseline_draws_seeds_in_a_row_and_trains_agreeing_groups_of_mixed_templates():
    cfg = _cfg(
        dynamic_sampling=True,
        tasks_per_iteration=3,
        max_groups_per_iteration=12,
        baseline="template",
        seeds_per_template=2,
    )
    worker = TemplatedWorker(parallel=1)  # one group at a time: the drawing order is the running order
    draws = asyncio.run(collect(worker, TaskSampler(_tasks(40), cfg.rl, seed=0), cfg, 0))
    order = [i for i, _ in worker.runs]
    assert all(order[k] % 3 == order[k + 1] % 3 for k in range(0, len(order) - 1, 2))  # pairs of one template
    # outcomes by id: % 4 == 0 mixed, 1 solved, 2 and 3 failed; templates are id % 3
    outcomes = {}
    for g in draws.groups:
        outcomes.setdefault(g.task_id % 3, set()).update(g.rewards)
    expected = [g for g in draws.groups if g.task_id % 4 == 0 or len(outcomes[g.task_id % 3]) > 1]
    assert [g.task_id for g in draws.train] == [g.task_id for g in expected]
    assert draws.contrast == len(expected) - sum(1 for g in draws.groups if g.task_id % 4 == 0) > 0
    assert draws.to_json()["contrast"] == draws.contrast
    # the default baseline keeps only the mixed groups
    plain_cfg = _cfg(dynamic_sampling=True, tasks_per_iteration=3, max_groups_per_iteration=12)
    sampler = TaskSampler(_tasks(40), plain_cfg.rl, seed=0)
    plain = asyncio.run(collect(TemplatedWorker(parallel=1), sampler, plain_cfg, 0))
    assert all(g.task_id % 4 == 0 for g in plain.train) and plain.contrast == 0
