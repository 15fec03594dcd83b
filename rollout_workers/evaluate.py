"""Evaluate a policy on a task split and print success per site.

    python -m rollout_workers.evaluate --config configs/cpu_demo.yaml [--checkpoint DIR] [--split test]
    python -m rollout_workers.evaluate --config ... --set scheduling.max_turns=30   # test-time scaling: more turns
    python -m rollout_workers.evaluate --config ... --checkpoint DIR --turns 2,4,8,16   # a sweep and its plot
    python -m rollout_workers.evaluate --config configs/miniwob_cpu.yaml --seeds 100000-100019,100100

Runs every task of the split (or a sample of `eval.max_tasks` of them, stratified by template) with
`eval.samples_per_task` episodes each, at `inference.eval_temperature`, through the same rollout path as training.
Success carries a 95% Wilson interval and a per-template breakdown.

`--turns` sweeps the turn budget (the paper's test-time scaling analysis): the same task sample is evaluated once
per budget, and success against turns (with intervals) goes to `turn_sweep.json` and `turn_sweep.png` in the run
folder. The engines, browsers and reward actors stay up across the sweep.

`--seeds` (a config with `environment.kind: miniwob` only) evaluates those seeds of `environment.miniwob_tasks`
instead of a split (and instead of any `environment.test_tasks` file): comma-separated seeds and inclusive ranges,
any seed outside the train range (0..499), in the stored instruction table or not. The instructions the table
lacks are read from the pages before Ray starts (`sites.miniwob.tasks.seed_tasks`, one page per task), and every
(task, seed) is evaluated (`eval.max_tasks` samples splits only). A train seed, a malformed list, or --seeds with
another environment prints one line saying what is wrong and what is valid, and exits 2, before anything starts.
Trajectories go to `eval_seeds.jsonl` (`eval_seeds_<n>turns.jsonl` in a sweep).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.cli import config_from_args, fail, run
from common.config import TrainConfig, add_config_args
from common.records import TrajectoryGroup, dump_jsonl
from common.tasks import Task
from rollout_workers.metrics import RolloutSummary, summarize

if TYPE_CHECKING:
    from rollout_workers.group import RolloutWorker


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
    worker: RolloutWorker,
    tasks: list[Task],
    cfg: TrainConfig,
    *,
    label: str = "eval",
    progress: bool = True,
    max_turns: int | None = None,
    sampled: bool = False,
    max_tasks: int | None = None,
) -> tuple[RolloutSummary, list[TrajectoryGroup]]:
    """`eval.samples_per_task` episodes of each task at `inference.eval_temperature` (a stratified sample of
    `max_tasks`, default `eval.max_tasks`, 0 = all; the same sample in every evaluation of a run, so before / after
    numbers compare the same episodes), with `max_turns` turns (default scheduling.max_turns). `sampled`:
    `eval.sampled_per_task` episodes per task at the training temperature instead."""
    n = cfg.eval.max_tasks if max_tasks is None else max_tasks
    tasks = stratified_sample(tasks, n, cfg.seed)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), desc=f"eval {label}", unit="task", file=sys.stdout)
    t0 = time.time()
    groups: list[TrajectoryGroup] = []
    per_task = cfg.eval.sampled_per_task if sampled else cfg.eval.samples_per_task
    async for g in worker.run_groups(tasks, per_task, evaluation=not sampled, max_turns=max_turns):
        groups.append(g)
        if bar is not None:
            done = [t.reward for gg in groups for t in gg.trajectories if t.reward is not None]
            bar.set_postfix(success=f"{sum(done) / max(1, len(done)):.2f}")
            bar.update(1)
    if bar is not None:
        bar.close()
    return summarize(groups, time.time() - t0), groups


async def turn_sweep(
    worker: RolloutWorker,
    tasks: list[Task],
    cfg: TrainConfig,
    budgets: list[int],
    *,
    progress: bool = True,
    max_tasks: int | None = None,
) -> tuple[list[dict[str, Any]], dict[int, list[TrajectoryGroup]]]:
    """Success per turn budget on the same task sample (`max_tasks` as in `evaluate`): one row per budget (the
    turns and that evaluation's `RolloutSummary` fields: success, its 95% interval, episodes, mean turns used,
    seconds, ...) and the groups of each."""
    rows, groups = [], {}
    for turns in budgets:
        summary, got = await evaluate(
            worker,
            tasks,
            cfg,
            label=f"{turns} turns",
            progress=progress,
            max_turns=turns,
            max_tasks=max_tasks,
        )
        groups[turns] = got
        rows.append({"turns": turns, **summary.to_json()})
    return rows, groups


def plot_turn_sweep(rows: list[dict[str, Any]], path: Any, title: str = "") -> None:
    """Success against the turn budget, with 95% intervals, log2 turns on x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["turns"] for r in rows]
    ys = [100 * (r["success"] or 0.0) for r in rows]
    lo = [y - 100 * (r["success_ci95"] or [0, 0])[0] for y, r in zip(ys, rows, strict=True)]
    hi = [100 * (r["success_ci95"] or [0, 0])[1] - y for y, r in zip(ys, rows, strict=True)]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("turn budget (max turns per episode)")
    ax.set_ylabel("held-out success (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def explicit_seed_tasks(cfg: TrainConfig, text: str) -> list[Task]:
    """The MiniWoB++ tasks of `--seeds` (placeholders unfilled). ValueError saying what is wrong and what is valid
    for another environment, a malformed list, a train seed, or an unknown task name."""
    kind = cfg.environment.kind
    if kind != "miniwob":
        raise ValueError(
            f"--seeds needs a config with environment.kind: miniwob (this one has {kind}); "
            "other environments are evaluated by --split"
        )
    from sites.miniwob.tasks import check_held_out, parse_seeds, seed_tasks

    try:
        seeds = parse_seeds(text)
        check_held_out(seeds)
    except ValueError as e:
        raise ValueError(f"--seeds {text}: {e}") from None
    return seed_tasks(seeds, cfg.environment.miniwob_tasks or None)


def main(argv: list[str] | None = None) -> int:
    from rollout_workers.preflight import check_run
    from rollout_workers.stack import Stack, ensure_dir, init_ray

    p = argparse.ArgumentParser(prog="python -m rollout_workers.evaluate", description=__doc__.split("\n")[0])
    add_config_args(p)
    p.add_argument("--checkpoint", help="model folder to evaluate (default: model.path)")
    p.add_argument("--split", default="test", choices=["train", "test"])
    p.add_argument("--turns", help="comma-separated turn budgets to sweep, e.g. 2,4,8,16 (test-time scaling)")
    p.add_argument(
        "--seeds",
        help="MiniWoB++ only: held-out seeds to evaluate instead of --split, e.g. 100000-100019,100100",
    )
    args = p.parse_args(argv)
    # Every input checked before Ray starts: a typo should cost a second, not an engine start.
    cfg = config_from_args(args)
    try:
        budgets = [int(x) for x in args.turns.split(",")] if args.turns else []
    except ValueError:
        budgets = [0]
    if any(b < 1 for b in budgets):
        fail(f"--turns {args.turns}: expected comma-separated turn budgets >= 1, e.g. 2,4,8,16")
    explicit = None
    if args.seeds is not None:
        try:
            explicit = explicit_seed_tasks(cfg, args.seeds)
        except ValueError as e:
            fail(str(e))
    check_run(cfg, splits=() if explicit is not None else (args.split,), checkpoint=args.checkpoint)
    # Explicit seeds are evaluated every one; a split is sampled to eval.max_tasks.
    label, max_tasks = ("seeds", 0) if explicit is not None else (args.split, None)
    init_ray(cfg)
    stack = Stack(cfg).start(args.checkpoint)
    try:
        tasks = stack.prepare(explicit, "--seeds tasks") if explicit is not None else stack.tasks(args.split)
    except BaseException:
        stack.close()
        raise
    if budgets:
        try:
            rows, by_turns = asyncio.run(
                turn_sweep(
                    stack.worker, tasks, cfg, budgets, progress=cfg.logging.progress, max_tasks=max_tasks
                )
            )
        finally:
            stack.close()
        out = ensure_dir(cfg.output_dir)
        for turns, groups in by_turns.items():
            dump_jsonl(
                [t for g in groups for t in g.trajectories],
                str(out / f"eval_{label}_{turns}turns.jsonl"),
            )
        what = args.checkpoint or cfg.model_path
        (out / "turn_sweep.json").write_text(
            json.dumps({"checkpoint": what, "rows": rows}, indent=1, default=str)
        )
        plot_turn_sweep(rows, out / "turn_sweep.png", title=f"{Path(str(what)).name} on {label}")
        for r in rows:
            ci = r["success_ci95"] or [float("nan")] * 2
            print(
                f"{r['turns']:4d} turns: success {r['success']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] ({r['episodes']} episodes)"
            )
        print(f"-> {out / 'turn_sweep.json'}, {out / 'turn_sweep.png'}")
        return 0
    try:
        summary, groups = asyncio.run(
            evaluate(
                stack.worker, tasks, cfg, label=label, progress=cfg.logging.progress, max_tasks=max_tasks
            )
        )
    finally:
        stack.close()
    out = ensure_dir(cfg.output_dir)
    dump_jsonl([t for g in groups for t in g.trajectories], str(out / f"eval_{label}.jsonl"))
    print(f"success: {summary.success}")
    for site, rate in summary.success_by_site.items():
        print(f"  {site:16s} {rate:.3f}")
    print(json.dumps(summary.to_json(), indent=1, default=str))
    return 0


if __name__ == "__main__":
    run(main)
