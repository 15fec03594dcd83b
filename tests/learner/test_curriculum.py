"""RL task sampling: the filters, the mixed-outcome and trained-group curricula; evaluation's stratified sample;
Wilson intervals."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from common.config import RLConfig
from common.records import Trajectory, TrajectoryGroup
from common.tasks import Task
from learner.curriculum import FLOOR, TaskSampler, outcome
from rollout_workers.evaluate import stratified_sample
from rollout_workers.metrics import wilson


def _tasks(per_template: dict[int, int]) -> list[Task]:
    out = []
    for tpl, n in per_template.items():
        for i in range(n):
            out.append(
                Task(
                    task_id=tpl * 1000 + i,
                    intent_template_id=tpl,
                    sites=["shopping"],
                    start_url="http://127.0.0.1:1/",
                    intent=f"task {tpl}/{i}",
                    eval={"eval_types": ["string_match"], "reference_answers": {"exact_match": "x"}},
                )
            )
    return out


def _group(task_id: int, rewards: list[float]) -> TrajectoryGroup:
    return TrajectoryGroup(
        task_id=task_id,
        trajectories=[Trajectory(task_id=task_id, sample_idx=i, reward=r) for i, r in enumerate(rewards)],
    )


def test_filters_keep_listed_and_expert_solved_templates_only():
    tasks = _tasks({101: 3, 102: 3, 103: 3})
    s = TaskSampler(tasks, RLConfig(templates=[101, 102], expert_solvable=True), solvable={102, 103})
    assert {t.intent_template_id for t in s.sample(10)} == {102} and s.size == 3
    with pytest.raises(ValueError, match="no train task left"):
        TaskSampler(tasks, RLConfig(templates=[101], expert_solvable=True), solvable={103})
    with pytest.raises(ValueError, match="needs the expert"):
        TaskSampler(tasks, RLConfig(expert_solvable=True), solvable=None)


def test_mixed_curriculum_favours_templates_whose_groups_are_mixed():
    tasks = _tasks({1: 5, 2: 5, 3: 5})
    s = TaskSampler(tasks, RLConfig(curriculum="mixed"), seed=1)
    assert s.weight(1) == s.weight(2) == 0.5  # unplayed templates: half their groups mixed, explored early
    s.record([_group(1000, [1, 0, 1, 0]), _group(2000, [0] * 4), _group(3000, [1] * 4)], iteration=0)
    # mixed share (mixed + 1) / (groups + 2): 2/3 for the mixed template, 1/3 for the all-same ones
    assert s.weight(1) == pytest.approx(2 / 3) and s.weight(2) == pytest.approx(1 / 3) == s.weight(3)
    drawn = Counter(t.intent_template_id for _ in range(600) for t in s.sample(1))
    assert drawn[1] > 1.5 * drawn[2] and drawn[1] > 1.5 * drawn[3] and drawn[2] > 0
    # a template half of whose episodes succeed but whose groups are never mixed (seed-decided) sinks to the floor
    s.record([_group(2000 + i % 5, [i % 2] * 4) for i in range(16)], iteration=1)
    assert s.weight(2) == pytest.approx(max(FLOOR, 1 / 18))


def test_all_same_tasks_rest_and_expert_members_are_not_the_policys_outcome():
    tasks = _tasks({1: 3})
    s = TaskSampler(tasks, RLConfig(rest_iterations=2), seed=0)
    guided = _group(1001, [0, 0, 0, 0])
    guided.trajectories.append(Trajectory(task_id=1001, sample_idx=4, reward=1.0, source="expert"))
    assert outcome(guided) == "all_failed" and outcome(guided, experts=True) == "mixed"
    s.record([_group(1000, [1, 1, 1, 1]), guided, _group(1002, [1, 0, 0, 0])], iteration=3)
    # iterations 4 and 5 skip the two all-same tasks; iteration 6 may draw them again
    assert [t.task_id for t in s.sample(3, iteration=4)] == [1002] == [t.task_id for t in s.sample(3, 5)]
    assert s.resting(4) == 2 and s.resting(6) == 0 and len(s.sample(3, iteration=6)) == 3
    # a mixed group ends a rest early; state() / restore() keep the records
    s.record([_group(1000, [1, 0, 1, 1])], iteration=4)
    twin = TaskSampler(tasks, RLConfig(rest_iterations=2), seed=5)
    twin.restore(json.loads(json.dumps(s.state())))
    assert twin.rest_until == s.rest_until == {1001: 6} and twin.last == s.last
    assert [t.task_id for t in twin.sample(3, 5)] == [t.task_id for t in s.sample(3, 5)]


def test_trained_curriculum_counts_guided_groups_as_mixed_and_does_not_rest_them():
    # template 1: the policy always fails, the expert member solves (a group that trains); template 2: all solved
    tasks = _tasks({1: 3, 2: 3})
    cfg = {"rest_iterations": 2}

    def guided(task_id: int, expert_reward: float) -> TrajectoryGroup:
        g = _group(task_id, [0, 0, 0, 0])
        g.trajectories.append(
            Trajectory(task_id=task_id, sample_idx=4, reward=expert_reward, source="expert")
        )
        return g

    batch = [guided(1000, 1.0), guided(1001, 0.0), _group(2000, [1] * 4)]
    mixed = TaskSampler(tasks, RLConfig(curriculum="mixed", **cfg), seed=0)
    trained = TaskSampler(tasks, RLConfig(curriculum="trained", **cfg), seed=0)
    for s in (mixed, trained):
        s.record(batch, iteration=0)
    # mixed: both guided groups are the policy's all-failed, so template 1 sinks like the all-solved template 2
    assert mixed.weight(1) == pytest.approx(1 / 4) and mixed.weight(2) == pytest.approx(1 / 3)
    assert mixed.resting(1) == 3
    # trained: the group the expert solved trained (1 of 2), the one it did not and the all-solved group did not
    assert trained.weight(1) == pytest.approx(2 / 4) and trained.weight(2) == pytest.approx(1 / 3)
    assert trained.resting(1) == 2 and 1000 not in trained.rest_until
    # the task's last outcome stays the policy's own
    assert trained.last[1000] == mixed.last[1000] == "all_failed"
    # without expert members the two curricula keep the same records
    plain = [_group(1002, [1, 0, 0, 0]), _group(2001, [0] * 4)]
    a = TaskSampler(tasks, RLConfig(curriculum="mixed", **cfg), seed=0)
    b = TaskSampler(tasks, RLConfig(curriculum="trained", **cfg), seed=0)
    for s in (a, b):
        s.record(plain, iteration=0)
    assert a.state() == b.state()


def test_demonstration_tasks_can_be_left_out():
    tasks = _tasks({1: 3, 2: 1})
    s = TaskSampler(tasks, RLConfig(), exclude={1000, 1001})
    assert s.size == 2 and s.excluded == 2
    with pytest.raises(ValueError, match="2 demonstration tasks excluded"):
        TaskSampler(_tasks({1: 2}), RLConfig(), exclude={1000, 1001})


def test_sample_gives_distinct_tasks_and_is_seeded():
    tasks = _tasks({1: 2, 2: 2})
    a = [t.task_id for t in TaskSampler(tasks, RLConfig(), seed=7).sample(4)]
    b = [t.task_id for t in TaskSampler(tasks, RLConfig(), seed=7).sample(4)]
    assert a == b and sorted(a) == sorted(t.task_id for t in tasks)


def test_stratified_sample_covers_every_template_evenly():
    tasks = _tasks({101: 3, 105: 12, 124: 4, 132: 2, 133: 1})
    got = stratified_sample(tasks, 8, seed=0)
    per = Counter(t.intent_template_id for t in got)
    assert len(got) == 8 and set(per) == {101, 105, 124, 132, 133}
    assert max(per.values()) - min(per.values()) <= 1 or per[133] == 1
    assert stratified_sample(tasks, 8, seed=0) == got  # the same tasks in every evaluation of a run
    assert stratified_sample(tasks, 0, seed=0) == tasks


def test_wilson_interval():
    lo, hi = wilson(0, 24)
    assert lo == 0.0 and hi == pytest.approx(0.138, abs=1e-3)
    lo, hi = wilson(12, 24)
    assert lo == pytest.approx(0.314, abs=1e-3) and hi == pytest.approx(0.686, abs=1e-3)


def test_config_rejects_an_empty_bc_batch():
    from common.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="batch_size"):
        load_config(None, ["bc.batch_size=0"])
