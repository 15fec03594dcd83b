"""Which train tasks an RL iteration plays: filters, per-task records, then a curriculum over templates.

    sampler = TaskSampler(train_tasks, cfg.rl, solvable={101, 132}, seed=0, exclude=demo_task_ids)
    task = sampler.draw(iteration, taken)   # one task not drawn yet this iteration and not resting (None: none left)
    tasks = sampler.sample(4, iteration)    # that, four times
    sampler.record(groups, iteration)       # each finished group: its template's estimate, its task's rest

Filters (`rl.templates`, `rl.expert_solvable`, the demonstration tasks when `rl.exclude_demo_tasks`): a task the
policy cannot finish within the turn budget gives a group of zeros, which carries no gradient under group-relative
advantages; so does a task it always solves. Both burn rollout and learner time on a 2-core machine.

What is learned from a group is whether it was *mixed* (its policy members' rewards differ), not its mean reward:
outcomes are decided by the (task, seed) far more than by sampling, so a template whose episodes succeed half the
time can still give almost no mixed groups (half its seeds always solved, half never). Two records follow:
- per template, the share of mixed groups among its last `WINDOW` groups; curriculum `mixed` draws a template with
  weight = the posterior mean of that share (Beta(1, 1) prior, so an unplayed template has 1/2 and is explored
  early), floored at `FLOOR` so no template is starved; `uniform` weighs a template by its number of tasks;
- per task (task id), the outcome of its last group: a task whose last group was all-solved or all-failed rests for
  `rl.rest_iterations` iterations (not drawn), in the spirit of GRESO's skipping of prompts predicted to be all-same.
Expert members (Trajectory.source == "expert") are not the policy's outcome and are left out of both records, except
under curriculum `trained`: there a group counts as mixed when it trained, i.e. its members differ counting the
expert member (`rl.expert_guidance`), so a template whose policy always fails but whose guided groups train keeps its
weight and its tasks do not rest, where `mixed` lets it sink to the floor. Without expert members the two agree.
"""

from __future__ import annotations

import random
from collections import defaultdict, deque
from collections.abc import Collection, Sequence
from typing import Any

from common.records import TrajectoryGroup
from common.tasks import Task

WINDOW = 16  # groups per template in the mixed-share estimate
FLOOR = 0.05  # least template weight under curriculum `mixed`


def outcome(group: TrajectoryGroup, experts: bool = False) -> str | None:
    """'mixed', 'all_solved' or 'all_failed' from the policy's own members (expert members only with `experts`);
    None for a failed group or one with fewer than two scored members (it says nothing about the task)."""
    if group.failed:
        return None
    members = [t for t in group.trajectories if experts or t.source != "expert"]
    rewards = [t.reward for t in members if t.reward is not None]
    if len(rewards) < 2:
        return None
    if max(rewards) != min(rewards):
        return "mixed"
    return "all_solved" if rewards[0] >= 1.0 else "all_failed"


class TaskSampler:
    def __init__(
        self,
        tasks: Sequence[Task],
        rl: Any,
        solvable: set[Any] | None = None,
        seed: int = 0,
        exclude: Collection[Any] = (),
    ) -> None:
        keep = [t for t in tasks if not rl.templates or t.intent_template_id in rl.templates]
        if rl.expert_solvable:
            if solvable is None:
                raise ValueError(
                    "rl.expert_solvable needs the expert's demonstrations (run the bc phase first)"
                )
            keep = [t for t in keep if t.intent_template_id in solvable]
        excluded = set(exclude)
        keep = [t for t in keep if t.task_id not in excluded]
        if not keep:
            raise ValueError(
                f"no train task left for RL after the filters (rl.templates={rl.templates}, "
                f"rl.expert_solvable={rl.expert_solvable}, expert-solved templates={sorted(map(str, solvable or []))}, "
                f"{len(excluded)} demonstration tasks excluded)"
            )
        self.curriculum, self.rest_iterations = rl.curriculum, rl.rest_iterations
        self.excluded = len(excluded)
        self.by_template: dict[Any, list[Task]] = defaultdict(list)
        for t in keep:
            self.by_template[t.intent_template_id].append(t)
        self.template_of = {t.task_id: t.intent_template_id for t in keep}
        self.mixed: dict[Any, deque[int]] = defaultdict(lambda: deque(maxlen=WINDOW))  # 1 = a mixed group
        self.last: dict[Any, str] = {}  # task id -> outcome of its last group
        self.rest_until: dict[Any, int] = {}  # task id -> first iteration it may be drawn again
        self.rng = random.Random(seed)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.by_template.values())

    def weight(self, template: Any) -> float:
        if self.curriculum == "uniform":
            return float(len(self.by_template[template]))
        seen = self.mixed[template]
        return max(FLOOR, (sum(seen) + 1.0) / (len(seen) + 2.0))

    def weights(self) -> dict[str, float]:
        return {str(k): round(self.weight(k), 3) for k in self.by_template}

    def resting(self, iteration: int) -> int:
        """Tasks that may not be drawn at `iteration`."""
        return sum(1 for until in self.rest_until.values() if until > iteration)

    def draw(self, iteration: int, taken: Collection[Any] = (), template: Any = None) -> Task | None:
        """One task: a template by weight (or `template` when given), then one of its tasks uniformly, among tasks
        not in `taken` (drawn already this iteration) and not resting; None when no task is left."""
        pools = {}
        for k, tasks in self.by_template.items():
            if template is not None and k != template:
                continue
            free = [
                t for t in tasks if t.task_id not in taken and self.rest_until.get(t.task_id, 0) <= iteration
            ]
            if free:
                pools[k] = free
        if not pools:
            return None
        keys = list(pools)
        k = self.rng.choices(keys, weights=[self.weight(x) for x in keys])[0]
        return pools[k][self.rng.randrange(len(pools[k]))]

    def sample(self, n: int, iteration: int = 0) -> list[Task]:
        """`n` distinct tasks (fewer if fewer are free) by `draw`."""
        out: list[Task] = []
        while len(out) < n:
            task = self.draw(iteration, {t.task_id for t in out})
            if task is None:
                break
            out.append(task)
        return out

    def record(self, groups: Sequence[TrajectoryGroup], iteration: int) -> None:
        """Fold the finished groups of `iteration` into the records: its template's mixed (or, under `trained`,
        trained) share, its task's last outcome (the policy's) and rest."""
        for g in groups:
            got = outcome(g)
            template = self.template_of.get(g.task_id)
            if got is None or template is None:
                continue
            # the group's signal: its policy members differ, or under `trained` its members with the expert's
            mixed = outcome(g, experts=self.curriculum == "trained") == "mixed"
            self.mixed[template].append(int(mixed))
            self.last[g.task_id] = got
            if not mixed and self.rest_iterations > 0:
                self.rest_until[g.task_id] = iteration + 1 + self.rest_iterations
            else:
                self.rest_until.pop(g.task_id, None)

    def state(self) -> dict[str, Any]:
        """What a resumed run needs to draw the same tasks next: the RNG and the records."""
        rng = self.rng.getstate()
        return {
            "rng": [rng[0], list(rng[1]), rng[2]],
            "mixed": [[k, list(v)] for k, v in self.mixed.items()],
            "last": [[k, v] for k, v in self.last.items()],
            "rest_until": [[k, v] for k, v in self.rest_until.items()],
        }

    def restore(self, state: dict[str, Any] | None) -> None:
        if not state:
            return
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.mixed.clear()
        for k, v in state.get("mixed", []):
            self.mixed[k].extend(v)
        self.last = {k: v for k, v in state.get("last", [])}
        self.rest_until = {k: v for k, v in state.get("rest_until", [])}
