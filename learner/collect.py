"""The rollouts of one RL iteration: draw groups, guide the all-failed ones, keep what carries signal.

    draws = await collect(worker, sampler, cfg, iteration, expert=ExpertPolicy(...), guided_templates={...})
    draws.train      # the groups the update gets
    draws.to_json()  # drawn / kept / dropped / expert counts for the log

Without `rl.dynamic_sampling`, `rl.tasks_per_iteration` tasks are drawn and every group that did not fail is
trained (a group with all-equal rewards gets zero advantages; the learner skips a batch without signal).
With it (DAPO's dynamic sampling), groups are drawn one task at a time, as many in flight as the browsers allow,
until `rl.tasks_per_iteration` groups with mixed outcomes are held or `rl.max_groups_per_iteration` are drawn;
groups whose policy members all got the same reward are dropped (kept in rollouts.jsonl, never trained). Groups
already in flight when the target is reached finish and are kept if mixed, so an iteration may train a few more
than the target; nothing is trained twice (every group belongs to exactly one iteration).

With `rl.baseline: template` a group is compared with every group of its template in the batch, so the update
gets, besides the mixed groups, every group whose members agree when its template's groups do not (a solved seed
beside a failed one); the stop rule still counts mixed groups. `rl.seeds_per_template` draws that many tasks of a
template in a row, so each template drawn has seeds to contrast.

Expert guidance (`rl.expert_guidance`): a group whose policy members all failed, of a template the expert solved
during the demonstrations, gets one more member (sample index G) played by the scripted expert through the same
episode loop, prompt builder and reward checks; when the expert succeeds the group is mixed and holds a success to
learn from. `rl.guide_up_to` extends that to groups that succeeded rarely (at most that share of the policy's
members), where the one success may be a guess: the group then also holds the expert's clean actions. Its turns
carry `source = "expert"` (no engine logprobs); learner/algos.py says how the loss treats them.

Resume: the sampler's records are updated once, when the iteration's groups are all in, so the tasks an iteration
draws depend only on the sampler state it started from (`Draws.sampler_state`, what a checkpoint saves) and on how
many groups it needed; a resumed run draws the same tasks in the same order.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from common.config import TrainConfig
from common.records import TrajectoryGroup
from common.tasks import Task
from learner.curriculum import TaskSampler, outcome
from learner.samples import template_of
from rollout_workers.group import RolloutWorker
from rollout_workers.policy import Policy


@dataclass
class Draws:
    """What one RL iteration drew and what it trains on."""

    iteration: int
    sampler_state: dict[
        str, Any
    ]  # the sampler before this iteration drew: a resumed run draws the same from it
    groups: list[TrajectoryGroup] = field(default_factory=list)  # every finished group, in completion order
    train: list[TrajectoryGroup] = field(default_factory=list)  # the groups the update gets
    drawn: int = 0
    outcomes: dict[str, int] = field(
        default_factory=dict
    )  # mixed / all_solved / all_failed / failed / few_scored
    # expert episodes played into all-failed groups (and, with rl.guide_up_to, rarely solved ones)
    expert_members: int = 0
    expert_solved: int = 0  # of those, scored 1
    contrast: int = (
        0  # one-outcome groups trained beside a differing group of their template (baseline=template)
    )
    seconds: float = 0.0

    def policy_groups(self) -> list[TrajectoryGroup]:
        """The groups as the policy played them (expert members left out): what training success is measured on."""
        return [
            g.model_copy(update={"trajectories": [t for t in g.trajectories if t.source != "expert"]})
            for g in self.groups
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "drawn": self.drawn,
            "kept": len(self.train),
            "dropped": self.drawn - len(self.train),
            "outcomes": dict(self.outcomes),
            "expert_members": self.expert_members,
            "expert_solved": self.expert_solved,
            "contrast": self.contrast,
            "seconds": round(self.seconds, 2),
        }


async def collect(
    worker: RolloutWorker,
    sampler: TaskSampler,
    cfg: TrainConfig,
    iteration: int,
    *,
    expert: Policy | None = None,
    guided_templates: set[int | str] | None = None,
) -> Draws:
    """Run the groups of one iteration (see the module docstring). `expert`: the expert policy for guidance
    (None = no guidance); `guided_templates`: the templates it may guide (None = any)."""
    rl = cfg.rl
    draws = Draws(iteration, sampler.state())
    t0 = time.time()
    want = rl.tasks_per_iteration
    cap = (rl.max_groups_per_iteration or 4 * want) if rl.dynamic_sampling else want
    limit = worker.parallel_groups(rl.group_size)
    taken: set[Any] = set()
    pending: set[asyncio.Task] = set()
    follow, left = None, 0  # the template being drawn in a row, and how many more of its tasks to draw

    async def one(task: Task) -> TrajectoryGroup:
        group = await worker.run_group(task, rl.group_size, iteration=iteration)
        if expert is not None and _needs_guide(group, rl.guide_up_to):
            if guided_templates is None or task.intent_template_id in guided_templates:
                await _guide(worker, task, group, expert, iteration, draws)
        return group

    while True:
        while (
            draws.drawn < cap
            and len(pending) < limit
            and (not rl.dynamic_sampling or len(draws.train) < want)
        ):
            task = sampler.draw(iteration, taken, template=follow) if left > 0 else None
            if task is None:
                task = sampler.draw(iteration, taken)
                follow, left = (task.intent_template_id if task else None), rl.seeds_per_template
            left -= 1
            if task is None:  # every task is drawn already or resting
                cap = draws.drawn
                break
            taken.add(task.task_id)
            draws.drawn += 1
            pending.add(asyncio.create_task(one(task)))
        if not pending:
            break
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for d in done:
            _keep(d.result(), draws, rl.dynamic_sampling)
    if rl.dynamic_sampling and rl.baseline == "template":
        _add_contrast(draws)
    sampler.record(draws.groups, iteration)
    draws.seconds = time.time() - t0
    return draws


def _keep(group: TrajectoryGroup, draws: Draws, dynamic: bool) -> None:
    """File a finished group: its outcome (with the expert member, if any) and whether the update gets it."""
    draws.groups.append(group)
    got = "failed" if group.failed else outcome(group, experts=True) or "few_scored"
    draws.outcomes[got] = draws.outcomes.get(got, 0) + 1
    if not group.failed and (got == "mixed" or not dynamic):
        draws.train.append(group)


def _add_contrast(draws: Draws) -> None:
    """baseline=template: train, besides the mixed groups, every sound group of a template whose groups' rewards
    (expert members included) differ over the iteration."""
    rewards: dict[Any, set[float]] = {}
    for g in draws.groups:
        if not g.failed:
            rewards.setdefault(template_of(g), set()).update(r for r in g.rewards if r is not None)
    kept = {id(g) for g in draws.train}
    draws.train = [
        g
        for g in draws.groups
        if id(g) in kept or (not g.failed and len(rewards[template_of(g)]) > 1 and outcome(g, experts=True))
    ]
    draws.contrast = len(draws.train) - len(kept)


def _needs_guide(group: TrajectoryGroup, up_to: float) -> bool:
    """Whether `group` gets an expert member: its policy members were scored, not all solved, and the share of
    them that succeeded is at most `up_to` (0: all failed)."""
    if outcome(group) in (None, "all_solved"):
        return False
    scored = [t.reward for t in group.trajectories if t.source != "expert" and t.reward is not None]
    return sum(1 for r in scored if r >= 1.0) <= up_to * len(scored)


async def _guide(
    worker: RolloutWorker, task: Task, group: TrajectoryGroup, expert: Policy, iteration: int, draws: Draws
) -> None:
    """One expert episode of `task` appended to `group` as member G (a group of one on the worker: sandbox,
    retries and scoring as for any member). An expert episode that fails its infrastructure is left out."""
    played = await worker.run_group(task, 1, iteration=iteration, policy=expert)
    member = played.trajectories[0]
    draws.expert_members += 1
    if played.failed:
        return
    member.sample_idx = len(group.trajectories)
    member.meta["expert_guidance"] = True
    group.trajectories.append(member)
    draws.expert_solved += int(member.reward is not None and member.reward >= 1.0)
