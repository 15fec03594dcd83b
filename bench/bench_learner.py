"""Learner benchmark: tokens/s of a BC step and an M-GRPO step of LearnerActor (DeepSpeed), against plain PyTorch.

    .venv/bin/python bench/bench_learner.py                      # SmolLM2-135M-Instruct when converted, else tiny
    .venv/bin/python bench/bench_learner.py --model tiny --prompt 128 --completion 16

The batch looks like a rollout batch: `--groups` groups of `--group-size` trajectories of `--turns` turns, each turn
a prompt (observation + history) of `--prompt` tokens or fewer (lengths spread down to `(1 - --spread)` of it, as
prompts of different pages and turns are) and a `--completion`-token action, random ids (seeded), binary rewards
with signal in every group. The RL step runs without the KL term (`--kl-beta 0`) so that it does the same work as
the baselines; with the paper's 0.001 it adds one no-grad reference forward per micro-batch, by design. Its one
extra forward, the KL probe after the step, covers `--kl-probe-share` of the micro-batches, as in the CPU presets.
Every contender takes one untimed warm-up step, then they are timed in turns (`--repeats` rounds, medians), in wall
time and in CPU seconds of this process: on a shared machine the CPU figure is the one that measures our work.
Baselines, measured in the same run on the same rows and micro-batches, with torch.optim.AdamW and no DeepSpeed:
  plain-full   the usual loop: HF `labels` loss (full-vocabulary logits on every position), prompts masked with -100;
  plain-same   the learner's own forward (left padding, logits only for the action window), no DeepSpeed:
               the gap to it is DeepSpeed's own cost.
Ratios > 1 mean the learner is faster. Tokens = prompt + completion tokens of the rows (what a step processes).
Figures (bench/results/learner.json): the RL step's CPU time over plain-full's on the same tokens (the overhead;
target <= 1.1), the BC step's tokens per CPU-second against each bare loop's (target >= 0.9), and the padding
fraction of the learner's micro-batches against batching the same rows by the same token budget in arrival order.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
os.environ.setdefault("DS_ACCELERATOR", "cpu")

from report import Figure, save  # noqa: E402


def pick_model(name: str) -> str:
    from common.models import build_tiny_model, ensure_default_model

    if name == "tiny":
        return build_tiny_model(Path(tempfile.gettempdir()) / "webagent-bench-tiny")
    if name == "default":
        try:
            return ensure_default_model()
        except Exception as e:  # noqa: BLE001 - fall back so the bench still reports something
            print(f"default model unavailable ({e}); using the tiny model", file=sys.stderr)
            return pick_model("tiny")
    return name


def make_groups(args, vocab: int):
    from common.records import Observation, Trajectory, TrajectoryGroup, Turn

    rng = random.Random(0)
    groups = []
    for g in range(args.groups):
        trajs = []
        for i in range(args.group_size):
            turns = [
                Turn(
                    index=k,
                    observation=Observation(text=""),
                    prompt_ids=[
                        rng.randrange(100, vocab)
                        for _ in range(rng.randint(int(args.prompt * (1 - args.spread)), args.prompt))
                    ],
                    completion_ids=[rng.randrange(100, vocab) for _ in range(args.completion)],
                    logprobs=[-2.0] * args.completion,
                )
                for k in range(args.turns)
            ]
            trajs.append(Trajectory(task_id=g, sample_idx=i, turns=turns, reward=float(i % 2)))
        groups.append(TrajectoryGroup(task_id=g, trajectories=trajs))
    return groups


class PlainLoop:
    """A plain PyTorch BC loop (torch.optim.AdamW, no DeepSpeed) over the learner's own rows and micro-batches."""

    def __init__(self, cfg, model: str, groups, same_forward: bool) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        from learner.samples import demo_samples, micro_batches

        self.net = AutoModelForCausalLM.from_pretrained(
            model, dtype=torch.float32, attn_implementation="sdpa"
        )
        self.net.train()
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=cfg.bc.lr)
        self.clip, self.same = cfg.learner.max_grad_norm, same_forward
        self.samples, _ = demo_samples([t for g in groups for t in g.trajectories], cfg.model.max_context)
        self.parts = micro_batches(self.samples, cfg.learner.micro_batch_tokens)
        self.tokens = sum(len(s.input_ids) for s in self.samples)

    def _loss(self, idx: list[int]):
        import torch

        from learner.algos import sft_loss, token_logprobs
        from learner.samples import collate

        b = collate([self.samples[i] for i in idx], pad_id=0)
        if self.same:
            out = self.net(
                input_ids=b.input_ids,
                attention_mask=b.attention_mask,
                position_ids=b.position_ids,
                logits_to_keep=b.logits_to_keep,
                use_cache=False,
            )
            total = sum(s.trained_tokens for s in self.samples)
            return sft_loss(token_logprobs(out.logits[:, :-1], b.targets), b.mask, total)
        labels = b.input_ids.clone()
        full_mask = torch.zeros_like(labels)
        full_mask[:, -b.mask.shape[1] :] = b.mask.long()
        labels[full_mask == 0] = -100  # prompts masked out, the usual way
        out = self.net(
            input_ids=b.input_ids,
            attention_mask=b.attention_mask,
            position_ids=b.position_ids,
            labels=labels,
            use_cache=False,
        )
        return out.loss * len(idx) / len(self.samples)

    def step(self) -> Any:
        """One forward+backward+AdamW step; its stats as the learner reports them (the tokens it covered)."""
        import torch

        from learner.stats import StepStats

        for idx in self.parts:
            self._loss(idx).backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return StepStats("rl", tokens=self.tokens)


def padding(cfg, groups) -> dict:
    """Padded share of the positions of the RL micro-batches: the learner's (longest first) and arrival order."""
    from learner.samples import micro_batches, rl_samples

    samples, _, _ = rl_samples(groups, cfg.model.max_context, cfg.rl.adv_eps, keep_zero_advantage=False)
    lens = [len(s.input_ids) for s in samples]

    def frac(parts: list[list[int]]) -> float:
        total = sum(len(p) * max(lens[i] for i in p) for p in parts)
        return 1.0 - sum(lens) / total

    arrival: list[list[int]] = []
    for i, n in enumerate(lens):  # the same budget rule, rows kept in the order they came
        if (
            arrival
            and (len(arrival[-1]) + 1) * max(n, *(lens[j] for j in arrival[-1]))
            <= cfg.learner.micro_batch_tokens
        ):
            arrival[-1].append(i)
        else:
            arrival.append([i])
    ours = micro_batches(samples, cfg.learner.micro_batch_tokens)
    return {"ours": frac(ours), "arrival": frac(arrival), "micro_batches": len(ours), "rows": len(lens)}


def timed(fn) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of this process, result). CPU seconds measure the work done even when other
    processes share the cores (wall time then mostly measures the neighbours)."""
    w, c = time.perf_counter(), time.process_time()
    res = fn()
    return time.perf_counter() - w, time.process_time() - c, res


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def run(cfg, model: str, groups, repeats: int) -> dict:
    """Warm up each contender once, then time them in turns (so load changes hit all alike); medians."""
    from learner.actor import LearnerActor

    w0 = time.perf_counter()
    learner = LearnerActor(cfg, model_path=model)
    init_s = time.perf_counter() - w0
    demos = [t for g in groups for t in g.trajectories]
    contenders = {
        "learner_bc": lambda: learner.bc_step(demos),
        "learner_rl": lambda: learner.rl_step(groups),
        "plain_full": PlainLoop(cfg, model, groups, same_forward=False).step,
        "plain_same": PlainLoop(cfg, model, groups, same_forward=True).step,
    }
    for fn in contenders.values():
        fn()
    walls: dict[str, list[float]] = {k: [] for k in contenders}
    cpus: dict[str, list[float]] = {k: [] for k in contenders}
    tokens = 0
    for _ in range(repeats):
        for name, fn in contenders.items():
            w, c, res = timed(fn)
            walls[name].append(w)
            cpus[name].append(c)
            tokens = res.tokens
    out = {"engine_init_s": init_s, "tokens": tokens, "repeats": repeats}
    for name in contenders:
        out[f"{name}_tokens_per_s"] = tokens / median(walls[name])
        out[f"{name}_tokens_per_cpu_s"] = tokens / median(cpus[name])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="default", help="default | tiny | an HF folder")
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--group-size", type=int, default=2)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=384)
    ap.add_argument("--completion", type=int, default=32)
    ap.add_argument("--spread", type=float, default=0.5, help="prompt lengths spread: [(1-spread)*P, P]")
    ap.add_argument("--kl-beta", type=float, default=0.0)
    ap.add_argument(
        "--kl-probe-share", type=float, default=0.25, help="rl.kl_probe_share (the CPU presets': 0.25)"
    )
    ap.add_argument("--zero-stage", type=int, default=0, help="0: the CPU presets' stage (one rank)")
    ap.add_argument("--micro-batch-tokens", type=int, default=1600)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from common.config import load_config

    model = pick_model(args.model)
    out_dir = tempfile.mkdtemp(prefix="bench-learner-")
    cfg = load_config(
        None,
        [
            f"logging.output_dir={out_dir}",
            "learner.resume=never",
            f"learner.zero_stage={args.zero_stage}",
            f"learner.micro_batch_tokens={args.micro_batch_tokens}",
            f"rl.kl_beta={args.kl_beta}",
            f"rl.kl_probe_share={args.kl_probe_share}",
        ],
    )
    from transformers import AutoConfig

    vocab = AutoConfig.from_pretrained(model).vocab_size
    groups = make_groups(args, vocab)
    res = {"model": model, "zero_stage": args.zero_stage, **run(cfg, model, groups, args.repeats)}
    print(
        f"model {model} | {res['tokens']} tokens per step | ZeRO-{args.zero_stage}, CPU fp32 | "
        f"median of {args.repeats}, contenders interleaved"
    )
    print(f"{'':34s}{'tokens/s':>10s}{'tokens/CPU-s':>14s}{'BC vs it (wall, CPU)':>24s}")
    for name, label in [
        ("learner_bc", "learner BC step (DeepSpeed)"),
        ("learner_rl", "learner RL step"),
        ("plain_full", "plain torch, HF labels loss"),
        ("plain_same", "plain torch, learner forward"),
    ]:
        ratio = ""
        if name.startswith("plain"):
            rw = res["learner_bc_tokens_per_s"] / res[f"{name}_tokens_per_s"]
            rc = res["learner_bc_tokens_per_cpu_s"] / res[f"{name}_tokens_per_cpu_s"]
            res[f"bc_vs_{name}"], res[f"bc_vs_{name}_cpu"] = rw, rc
            ratio = f"x{rw:.2f}, x{rc:.2f}"
        print(
            f"{label:34s}{res[f'{name}_tokens_per_s']:10.1f}{res[f'{name}_tokens_per_cpu_s']:14.1f}{ratio:>24s}"
        )
    pad = padding(cfg, groups)
    overhead = res["plain_full_tokens_per_cpu_s"] / res["learner_rl_tokens_per_cpu_s"]
    figures = [
        Figure(
            "learner RL step CPU time / bare HF forward+backward+AdamW, same tokens",
            f"{res['learner_rl_tokens_per_cpu_s']:.0f} tok/CPU-s",
            f"{res['plain_full_tokens_per_cpu_s']:.0f} tok/CPU-s",
            overhead,
            "<= 1.1",
        ),
        Figure(
            "learner BC step / bare HF forward+backward+AdamW (HF labels loss), same rows, tokens/CPU-s",
            f"{res['learner_bc_tokens_per_cpu_s']:.0f} tok/CPU-s",
            f"{res['plain_full_tokens_per_cpu_s']:.0f} tok/CPU-s",
            res["bc_vs_plain_full_cpu"],
            ">= 0.9",
        ),
        Figure(
            "learner BC step / bare loop on the learner's own forward, same rows, tokens/CPU-s",
            f"{res['learner_bc_tokens_per_cpu_s']:.0f} tok/CPU-s",
            f"{res['plain_same_tokens_per_cpu_s']:.0f} tok/CPU-s",
            res["bc_vs_plain_same_cpu"],
            ">= 0.9",
        ),
        Figure(
            "padding fraction of the learner's micro-batches / arrival-order batching",
            f"{pad['ours']:.1%}",
            f"{pad['arrival']:.1%}",
            pad["ours"] / pad["arrival"] if pad["arrival"] else None,
        ),
    ]
    save("learner", figures, {**res, "padding": pad, "kl_beta": args.kl_beta, "shape": vars(args)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
