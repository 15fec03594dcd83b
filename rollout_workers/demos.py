"""Behaviour-cloning demonstrations: the scripted expert plays tasks through the one episode loop.

    python -m rollout_workers.demos --config configs/cpu_demo.yaml --out demos.jsonl [--split train]

The expert (`rollout_workers.policy.ExpertPolicy`) runs in `RolloutWorker.run_groups` like the model does, with
groups of one: the same browsers, sandboxes, retries, prompt builder and reward checks. So every demonstration turn
carries the exact prompt ids the model will be shown, and the expert only ever acted on the page as that prompt
shows it (cut to `prompt.obs_max_tokens` real tokens). Episodes the reward checks score 1 are kept.

Tasks are chosen balanced across templates (round-robin, seeded) so that no template dominates behaviour cloning;
`bc.probe_per_template` first probes every template and then spends the rest of the plays on those the expert solved.
A demonstration whose reply is longer than `inference.max_new_tokens` teaches what the model can never write in
one turn: each is logged with a warning and counted.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from common.cli import config_from_args, run
from common.config import TrainConfig, add_config_args
from common.records import Trajectory, dump_jsonl
from common.tasks import Task
from rollout_workers.evaluate import stratified_sample
from rollout_workers.policy import ExpertPolicy

if TYPE_CHECKING:
    from rollout_workers.group import RolloutWorker

log = logging.getLogger(__name__)


@dataclass
class DemoReport:
    """What the expert did: per template, episodes played and scored 1, and why the others were dropped."""

    played: Counter = field(default_factory=Counter)
    solved: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    over_budget: int = 0  # kept demonstrations with a reply longer than inference.max_new_tokens
    turns_max: Counter = field(default_factory=Counter)  # template -> most turns a solved episode took
    gave_up: dict[Any, Counter] = field(default_factory=dict)  # template -> the expert's reasons -> count

    def as_dict(self) -> dict[str, Any]:
        return {
            "played": sum(self.played.values()),
            "solved": sum(self.solved.values()),
            "dropped": dict(self.dropped),
            "over_budget": self.over_budget,
            "by_template": {
                str(k): {
                    "played": n,
                    "solved": self.solved[k],
                    "turns_max": self.turns_max[k],
                    **({"gave_up": dict(self.gave_up[k])} if k in self.gave_up else {}),
                }
                for k, n in sorted(self.played.items(), key=lambda kv: str(kv[0]))
            },
        }

    def solvable_templates(self) -> set[Any]:
        """Templates the expert solved at least once (within the turn budget it was played with)."""
        return {k for k, n in self.solved.items() if n}


def _why_dropped(t: Trajectory) -> str:
    if t.failure:
        return "infrastructure failure"
    if t.termination == "gave_up":
        return "expert gave up"
    if t.reward is None:
        return "unscorable"
    if t.termination == "max_turns":
        return "max turns"
    return "scored 0"


async def collect_demos(
    worker: RolloutWorker, tasks: list[Task], cfg: TrainConfig, *, limit: int = 0
) -> tuple[list[Trajectory], DemoReport]:
    """Play the expert on a template-balanced sample of `limit` tasks (0 = all); the episodes scored 1 and a report.
    Episodes have the model's turn budget (`scheduling.max_turns`): a task the expert cannot finish within it is no
    demonstration, and its template counts as out of reach for RL's `rl.expert_solvable`.

    With `bc.probe_per_template` = k > 0 the plays come in two rounds: k tasks of every template first, then the rest
    of `limit`, round-robin over the templates the expert solved in the first round (tasks not played yet), so the
    budget goes to demonstrations rather than to templates the expert cannot finish."""
    policy = ExpertPolicy(worker.builder, cfg.prompt.grammar, cfg.prompt.thinking, style=cfg.bc.reply_style)
    report, kept = DemoReport(), []
    probe = cfg.bc.probe_per_template
    templates = {t.intent_template_id for t in tasks}
    if probe > 0 and 0 < limit and probe * len(templates) < limit:
        first = stratified_sample(tasks, probe * len(templates), cfg.seed + 1)
        await _play(worker, first, policy, cfg, report, kept)
        played = {t.task_id for t in first}
        solvable = report.solvable_templates()
        rest = [t for t in tasks if t.intent_template_id in solvable and t.task_id not in played]
        log.info(
            "expert probe: %d of %d templates solved in %d plays; %d more plays on those",
            len(solvable),
            len(templates),
            len(first),
            min(limit - len(first), len(rest)),
        )
        await _play(
            worker, stratified_sample(rest, limit - len(first), cfg.seed + 2), policy, cfg, report, kept
        )
    else:
        await _play(worker, stratified_sample(tasks, limit, cfg.seed + 1), policy, cfg, report, kept)
    return kept, report


async def _play(
    worker: Any, chosen: list[Task], policy: ExpertPolicy, cfg: TrainConfig, report: DemoReport, kept: list
) -> None:
    """Play `chosen` once each with the expert; count every episode in `report`, keep those scored 1 in `kept`."""
    if not chosen:
        return
    budget = cfg.inference.max_new_tokens
    first = len(kept)
    async for group in worker.run_groups(chosen, 1, evaluation=True, policy=policy):
        for t in group.trajectories:
            template = t.meta.get("template")
            report.played[template] += 1
            if t.reward != 1.0 or t.failure:
                report.dropped[_why_dropped(t)] += 1
                if t.termination == "gave_up":
                    why = str(t.meta.get("gave_up", ""))[:120]
                    report.gave_up.setdefault(template, Counter())[why] += 1
                continue
            report.solved[template] += 1
            report.turns_max[template] = max(report.turns_max[template], len(t.turns))
            long = [n for n in (len(x.completion_ids) for x in t.turns) if n > budget]
            if long:
                report.over_budget += 1
                log.warning(
                    "demonstration %s: %d repl%s longer than inference.max_new_tokens=%d (longest %d tokens)",
                    t.id,
                    len(long),
                    "y" if len(long) == 1 else "ies",
                    budget,
                    max(long),
                )
            kept.append(t)
    # plays finish in any order: the kept ones follow `chosen` (the seeded, template-balanced order), so a run's
    # demonstrations and its held-out split do not depend on which browser was faster
    order = {t.task_id: i for i, t in enumerate(chosen)}
    kept[first:] = sorted(kept[first:], key=lambda t: order[t.task_id])


def main(argv: list[str] | None = None) -> int:
    from rollout_workers.preflight import check_run
    from rollout_workers.stack import Stack, init_ray

    p = argparse.ArgumentParser(prog="python -m rollout_workers.demos", description=__doc__.split("\n")[0])
    add_config_args(p)
    p.add_argument("--split", default="train", choices=["train", "test"])
    p.add_argument("--out", required=True, help="JSONL file of the demonstrations scored 1")
    p.add_argument("--limit", type=int, default=None, help="tasks to play (default: bc.max_demos; 0 = all)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    cfg = config_from_args(args)
    check_run(cfg, splits=(args.split,))  # before Ray: one error line and exit 2
    init_ray(cfg)
    stack = Stack(cfg).start(engines=False)
    try:
        limit = cfg.bc.max_demos if args.limit is None else args.limit
        demos, report = asyncio.run(collect_demos(stack.worker, stack.tasks(args.split), cfg, limit=limit))
    finally:
        stack.close()
    dump_jsonl(demos, args.out)
    import json

    print(json.dumps(report.as_dict(), indent=1))
    print(f"{len(demos)} demonstrations -> {args.out}")
    return 0


if __name__ == "__main__":
    run(main)
