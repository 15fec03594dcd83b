"""Which train tasks an RL iteration plays: filters, then a curriculum over templates.

    sampler = TaskSampler(train_tasks, cfg.rl, solvable={101, 132}, seed=0)
    tasks = sampler.sample(4)          # distinct tasks, templates drawn by weight
    sampler.record(groups)             # each finished group updates its template's success estimate

Filters (`rl.templates`, `rl.expert_solvable`): a task the policy cannot finish within the turn budget gives a group
of zeros, which carries no gradient under group-relative advantages; so does a task it always solves. Both burn
rollout and learner time on a 2-core machine.
Curriculum `mixed` (in the spirit of WebRL's self-evolving curriculum and DAPO's dynamic sampling): a template's
weight is 4 p (1 - p), where p is the posterior mean success of its recent groups (a Beta(1, 1) prior over the last
`WINDOW` episodes), floored at `FLOOR` so no template is starved. A template never played has p = 1/2, weight 1:
unknown templates are explored first. `uniform`: every remaining task equally likely.
"""

from __future__ import annotations

import random
from collections import defaultdict, deque
from typing import Any

from common.tasks import Task

WINDOW = 16
FLOOR = 0.1


class TaskSampler:
    def __init__(self, tasks: list[Task], rl: Any, solvable: set[Any] | None = None, seed: int = 0) -> None:
        keep = [t for t in tasks if not rl.templates or t.intent_template_id in rl.templates]
        if rl.expert_solvable:
            if solvable is None:
                raise ValueError(
                    "rl.expert_solvable needs the expert's demonstrations (run the bc phase first)"
                )
            keep = [t for t in keep if t.intent_template_id in solvable]
        if not keep:
            raise ValueError(
                f"no train task left for RL after the filters (rl.templates={rl.templates}, "
                f"rl.expert_solvable={rl.expert_solvable}, expert-solved templates={sorted(map(str, solvable or []))})"
            )
        self.curriculum = rl.curriculum
        self.by_template: dict[Any, list[Task]] = defaultdict(list)
        for t in keep:
            self.by_template[t.intent_template_id].append(t)
        self.recent: dict[Any, deque[float]] = defaultdict(lambda: deque(maxlen=WINDOW))
        self.rng = random.Random(seed)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.by_template.values())

    def weight(self, template: Any) -> float:
        if self.curriculum == "uniform":
            return float(len(self.by_template[template]))
        seen = self.recent[template]
        p = (sum(seen) + 1.0) / (len(seen) + 2.0)
        return max(FLOOR, 4.0 * p * (1.0 - p))

    def weights(self) -> dict[str, float]:
        return {str(k): round(self.weight(k), 3) for k in self.by_template}

    def sample(self, n: int) -> list[Task]:
        """`n` distinct tasks (fewer if fewer remain): a template by weight, then a task of it uniformly."""
        pools = {k: list(v) for k, v in self.by_template.items()}
        out: list[Task] = []
        while len(out) < n and pools:
            keys = list(pools)
            k = self.rng.choices(keys, weights=[self.weight(x) for x in keys])[0]
            out.append(pools[k].pop(self.rng.randrange(len(pools[k]))))
            if not pools[k]:
                del pools[k]
        return out

    def state(self) -> dict[str, Any]:
        """What a resumed run needs to draw the same tasks next: the RNG and the recent outcomes."""
        rng = self.rng.getstate()
        return {
            "rng": [rng[0], list(rng[1]), rng[2]],
            "recent": [[k, list(v)] for k, v in self.recent.items()],
        }

    def restore(self, state: dict[str, Any] | None) -> None:
        if not state:
            return
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        for k, v in state["recent"]:
            self.recent[k].extend(v)

    def record(self, groups: list[Any], template_of: dict[Any, Any]) -> None:
        """Fold finished groups' rewards into their templates' estimates (`template_of`: task id -> template)."""
        for g in groups:
            template = template_of.get(g.task_id)
            for r in g.rewards:
                if r is not None:
                    self.recent[template].append(float(r))
