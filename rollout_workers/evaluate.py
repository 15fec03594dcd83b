"""Evaluate a policy on a task split and print success per site.

    python -m rollout_workers.evaluate --config configs/cpu_demo.yaml [--checkpoint DIR] [--split test]
    python -m rollout_workers.evaluate --config ... --set rollout.max_turns=30   # test-time scaling: more turns

Runs every task of the split (or a sample of `eval.max_tasks` of them, stratified by template) with
`eval.samples_per_task` episodes each, at `inference.eval_temperature`, through the same rollout path as training.
Success carries a 95% Wilson interval and a per-template breakdown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from typing import Any

from common.config import TrainConfig, add_config_args, load_config
from common.records import TrajectoryGroup, dump_jsonl
from common.tasks import Task
from rollout_workers.metrics import summarize


def stratified_sample(tasks: list[Task], n: int, seed: int) -> list[Task]:
    """`n` tasks spread over templates (`intent_template_id`): round-robin over the templates in a seeded order,
    each template's tasks in a seeded order, so every template is represented once n >= the number of templates
    and no template gets two more than another. n <= 0 or n >= len(tasks): all tasks."""
    if n <= 0 or n >= len(tasks):
        return list(tasks)
    rng = random.Random(seed)
    by_template: dict[Any, list[Task]] = {}
    for t in tasks:
        by_template.setdefault(t.intent_template_id, []).append(t)
    pools = list(by_template.values())
    rng.shuffle(pools)
    for pool in pools:
        rng.shuffle(pool)
    out: list[Task] = []
    while len(out) < n:
        for pool in pools:
            if pool and len(out) < n:
                out.append(pool.pop())
    return out


async def evaluate(
    worker: Any, tasks: list[Task], cfg: TrainConfig, *, label: str = "eval", progress: bool = True
) -> tuple[dict[str, Any], list[TrajectoryGroup]]:
    """`eval.samples_per_task` episodes of each task (a stratified sample of `eval.max_tasks`; the same sample in
    every evaluation of a run, so before / after numbers compare the same tasks)."""
    tasks = stratified_sample(tasks, cfg.eval.max_tasks, cfg.seed)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), desc=f"eval {label}", unit="task", file=sys.stdout)
    t0 = time.time()
    groups: list[TrajectoryGroup] = []
    async for g in worker.run_groups(tasks, cfg.eval.samples_per_task, evaluation=True):
        groups.append(g)
        if bar is not None:
            done = [t.reward for gg in groups for t in gg.trajectories if t.reward is not None]
            bar.set_postfix(success=f"{sum(done) / max(1, len(done)):.2f}")
            bar.update(1)
    if bar is not None:
        bar.close()
    return summarize(groups, time.time() - t0), groups


def main(argv: list[str] | None = None) -> int:
    from rollout_workers.stack import Stack, ensure_dir, init_ray

    p = argparse.ArgumentParser(prog="python -m rollout_workers.evaluate", description=__doc__.split("\n")[0])
    add_config_args(p)
    p.add_argument("--checkpoint", help="model folder to evaluate (default: model.path)")
    p.add_argument("--split", default="test", choices=["train", "test"])
    args = p.parse_args(argv)
    cfg = load_config(args.config, args.set)
    init_ray(cfg)
    stack = Stack(cfg).start(args.checkpoint)
    try:
        summary, groups = asyncio.run(
            evaluate(
                stack.worker, stack.tasks(args.split), cfg, label=args.split, progress=cfg.logging.progress
            )
        )
    finally:
        stack.close()
    out = ensure_dir(cfg.output_dir)
    dump_jsonl([t for g in groups for t in g.trajectories], str(out / f"eval_{args.split}.jsonl"))
    print(f"success: {summary['success']}")
    for site, rate in summary["success_by_site"].items():
        print(f"  {site:16s} {rate:.3f}")
    print(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
