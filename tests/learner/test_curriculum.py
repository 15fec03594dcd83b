"""RL task sampling: the filters and the mixed-outcome curriculum; evaluation's stratified sample; Wilson intervals."""

from __future__ import annotations

from collections import Counter

import pytest

from common.config import RLConfig
from common.records import Trajectory, TrajectoryGroup
from common.tasks import Task
from learner.curriculum import FLOOR, TaskSampler
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


def test_mixed_curriculum_favours_templates_with_mixed_outcomes():
    tasks = _tasks({1: 5, 2: 5, 3: 5})
    s = TaskSampler(tasks, RLConfig(curriculum="mixed"), seed=1)
    assert s.weight(1) == s.weight(2) == 1.0  # unplayed templates: p = 1/2, explored first
    template_of = {t.task_id: t.intent_template_id for t in tasks}
    s.record([_group(1000, [1, 0, 1, 0]), _group(2000, [0] * 8), _group(3000, [1] * 8)], template_of)
    # p = (0 + 1) / (8 + 2) = 0.1 for all-zero groups: weight 4 * 0.1 * 0.9 = 0.36 (the prior keeps some hope)
    assert s.weight(1) == pytest.approx(1.0) and s.weight(2) == pytest.approx(0.36) == s.weight(3)
    drawn = Counter(t.intent_template_id for _ in range(600) for t in s.sample(1))
    assert drawn[1] > 2 * drawn[2] and drawn[1] > 2 * drawn[3] and drawn[2] > 0
    s.record([_group(2000, [0] * 16)], template_of)  # a long run of failures: down to the floor
    assert s.weight(2) == pytest.approx(max(FLOOR, 4 * (1 / 18) * (17 / 18)))


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
