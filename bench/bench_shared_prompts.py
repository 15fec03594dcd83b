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
step, off / on (> 1: the prefix trees are faster). Writes bench/results/shared_prompts.json.
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=400)
    ap.add_argument("--system", type=int, default=115, help="leading tokens every prompt shares")
    ap.add_argument("--repeats", type=int, default=3)
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
            )
        ],
        {
            "rows": rows,
            "seconds": {"off": secs[False], "on": secs[True]},
            "micro_batches": micro,
            **vars(args),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
