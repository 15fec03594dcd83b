"""The learner's RL step with its micro-batches as prefix trees (`learner.share_prompts`: a group's first turns on
one prompt, every prompt's system prompt once per micro-batch) against the same step with every row left-padded on
its own, in the same run, on the same batch.

    .venv/bin/python bench/bench_shared_prompts.py [--groups 4] [--group-size 4] [--prompt 400] [--system 115]
                                                    [--repeats 3]

The batch is shaped like an RL iteration of the MiniWoB++ preset: `--groups` groups of `--group-size` episodes,
each episode's first turn on its group's one start page (`--prompt` tokens) with a 10-14 token action, and a
third of the episodes with a second turn on a page of their own; every prompt starts with the same `--system`
tokens (the preset's prompts share their first 115: the compact system prompt in the chat template). The step is
`LearnerActor.rl_step` as the preset runs it (DeepSpeed stage 0 on CPU, bf16 autocast, two passes per batch, the
KL probe after the last). The arms alternate, after one warm-up step each; the figure is the median seconds per
step, off / on (> 1: the prefix trees are faster).

A second pair times a BC step (`LearnerActor.bc_step`) on `--bc-rows` demonstrations (a third of them with a
second turn), every turn on a page of its own (`--bc-prompt` tokens after the shared `--system` ones, as the shop demo's 764-token prompts are), laid out
as prefix trees and as padded rows, and says which `learner/samples.py` `layout` picks for them: trees share only
the system prompt there, so they save little work and cost their extra forward calls. Writes
bench/results/shared_prompts.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def batch(groups: int, size: int, prompt: int, system: int = 0, seed: int = 0):
    from common.records import Observation, Trajectory, TrajectoryGroup, Turn

    rng = random.Random(seed)

    def ids(n: int) -> list[int]:
        return [rng.randrange(100, 40000) for _ in range(n)]

    def turn(i: int, p: list[int]) -> Turn:
        c = ids(rng.randint(10, 14))
        return Turn(
            index=i,
            observation=Observation(text="page"),
            prompt_ids=p,
            completion_ids=c,
            logprobs=[-1.0] * len(c),
        )

    head = ids(system)  # the system prompt every prompt starts with
    out = []
    for g in range(groups):
        start = head + ids(prompt - system)
        trajs = []
        for k in range(size):
            turns = [turn(0, start)]
            if rng.random() < 1 / 3:
                turns.append(turn(1, head + ids(prompt + 50 - system)))
            trajs.append(Trajectory(task_id=g, sample_idx=k, turns=turns, reward=float(k % 2 == 0)))
        out.append(TrajectoryGroup(task_id=g, trajectories=trajs))
    return out


def bc_demos(n: int, prompt: int, system: int):
    """`n` demonstrations, every turn on a page of its own after the same `system` tokens: `batch`'s episodes,
    one per group."""
    return [g.trajectories[0] for g in batch(n, 1, prompt, system, seed=1)]


def time_bc(learner, demos, repeats: int) -> tuple[dict[bool, float], bool]:
    """Median seconds of a BC step on `demos`, as prefix trees (True) and as padded rows (False), alternating after
    a warm-up each; and whether `layout` picks trees for their rows."""
    import learner.samples as samples

    picked = samples.layout(
        samples.demo_samples(demos, learner.cfg.model.max_context)[0],
        learner.cfg.learner.micro_batch_tokens,
        share_prompts=True,
    )[1]
    default = samples.TREE_WORK_SHARE
    secs: dict[bool, list[float]] = {False: [], True: []}
    try:
        learner.share_prompts = True
        for rep in range(repeats + 1):
            for tree in (False, True):
                samples.TREE_WORK_SHARE = 1.0 if tree else 0.0  # force the layout of this arm
                t0 = time.perf_counter()
                learner.bc_step(demos)
                if rep:
                    secs[tree].append(time.perf_counter() - t0)
    finally:
        samples.TREE_WORK_SHARE = default
    return {k: statistics.median(v) for k, v in secs.items()}, picked


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=400)
    ap.add_argument("--system", type=int, default=115, help="leading tokens every prompt shares")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--bc-rows", type=int, default=4, help="demonstrations of a BC step (the shop's batch: 4 turns)"
    )
    ap.add_argument("--bc-prompt", type=int, default=760, help="tokens of each BC row's prompt")
    args = ap.parse_args(argv)
    from common.config import load_config
    from common.models import ensure_default_model
    from learner.actor import LearnerActor

    root = Path(__file__).resolve().parents[1]
    cfg = load_config(
        root / "configs/miniwob_cpu.yaml",
        [
            f"model.path={ensure_default_model()}",
            "logging.output_dir=/tmp/bench-shared-prompts",
            "learner.resume=never",
            "rl.lr=1e-7",
            "rl.warmup_steps=0",
        ],
    )
    learner = LearnerActor(cfg)
    learner.begin_rl()
    groups = batch(args.groups, args.group_size, args.prompt, args.system)
    rows = sum(len(t.turns) for g in groups for t in g.trajectories)
    secs: dict[bool, list[float]] = {False: [], True: []}
    micro: dict[bool, int] = {}
    for rep in range(args.repeats + 1):
        for share in (False, True):
            learner.share_prompts = share
            t0 = time.perf_counter()
            m = learner.rl_step(groups)
            if rep:  # the first of each arm warms up
                secs[share].append(time.perf_counter() - t0)
            micro[share] = m.micro_batches
    off, on = statistics.median(secs[False]), statistics.median(secs[True])
    print(f"| rows | arm | micro-batches | s per RL step (median of {args.repeats}) |\n|---|---|---|---|")
    for share, med in ((False, off), (True, on)):
        print(f"| {rows} | share_prompts={share} | {micro[share]} | {med:.1f} |")
    print(f"speed-up: {off / on:.2f}x")
    bc, picked = time_bc(learner, bc_demos(args.bc_rows, args.bc_prompt, args.system), args.repeats)
    print(f"| {args.bc_rows} | BC step, padded rows | - | {bc[False]:.1f} |")
    print(f"| {args.bc_rows} | BC step, prefix trees | - | {bc[True]:.1f} |")
    print(
        f"BC: trees take {bc[True] / bc[False]:.2f}x the padded rows' time; layout picks {'trees' if picked else 'padded rows'}"
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from report import Figure, save

    save(
        "shared_prompts",
        [
            Figure(
                "learner RL step, padded rows / prefix-tree micro-batches (same batch)",
                f"{on:.1f} s",
                f"{off:.1f} s",
                off / on,
                ">= 1.5",
            ),
            Figure(
                "learner BC step seconds on distinct pages, prefix trees / padded rows (same rows; layout picks "
                + ("trees)" if picked else "padded rows)"),
                f"{bc[True]:.1f} s",
                f"{bc[False]:.1f} s",
                bc[True] / bc[False],
                "",
            ),
        ],
        {
            "rows": rows,
            "seconds": {"off": secs[False], "on": secs[True]},
            "micro_batches": micro,
            "bc_seconds": {"padded_rows": bc[False], "trees": bc[True]},
            "bc_layout_picks_trees": picked,
            **vars(args),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
