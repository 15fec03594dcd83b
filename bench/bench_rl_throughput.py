"""Throughput of the real RL loop on the MiniWoB++ preset, this tree against commit 04625e0 in the same run, and
each stage against its own ceiling on this machine.

    .venv/bin/python bench/bench_rl_throughput.py [--iterations 3] [--bc-checkpoint runs/NAME/checkpoints/ckpt-N]

Both arms are the driver as a user runs it (`python -m learner.train --config configs/miniwob_cpu.yaml`, phases
[rl], `--iterations` RL iterations, each in its own process with its own local Ray), from the same BC checkpoint
and its run's expert report (demos.jsonl, demos.report.json next to its checkpoints/ folder): `--bc-checkpoint`,
else the short BC run bench/bench_overlap.py makes and reuses (runs/bench-overlap-bc). The old arm runs in a
detached git worktree of 04625e0 (removed afterwards) with that commit's own code and its own preset: it is the
preset as it was, not today's settings on old code. Each arm's engine requests are recorded by
bench/engine_probe (prompt tokens, prompt tokens served from the prefix cache, generated tokens, seconds), its
iterations by its log.jsonl.

Figures, over the steady state (the iterations after the first, which pays the first pages and engine steps):
episodes and turns per minute of the RL loop's wall time, groups with mixed outcomes (non-zero advantages) the
learner got per minute, engine prefill (prompt tokens not served from the prefix cache) and decode tokens per second
of engine-busy time (the union of its requests' intervals: prefill and decode share it), learner tokens per second,
seconds of an iteration split into rollouts / learner / push / idle (the rest: logging, saving rollouts, healing);
over all iterations: prompt and prefill tokens per episode and the prefix-cache hit rate (cached / prompt tokens).
Ceilings, measured here after both arms on rows of the arm's mean prompt: a bare HF forward of the checkpoint in
bf16 (prefill) and the bare forward + backward + AdamW step of bench/bench_learner_options.py with bf16 autocast
(learner), both with this process's torch threads.
Target (issue 23): episodes per minute >= 2x 04625e0's. Writes bench/results/rl_throughput.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_overlap import BC_RUN, bc_checkpoint, driver  # noqa: E402
from report import Figure, save  # noqa: E402

from learner.report import read_log  # noqa: E402

OLD = "04625e0"
CONFIG = "configs/miniwob_cpu.yaml"  # each arm's own, relative to its tree
PROBE = ROOT / "bench" / "engine_probe"


def arm(label: str, tree: Path, ckpt: Path, iterations: int) -> dict[str, Any]:
    """One driver run of the RL phase in `tree`; returns its figures (see `figures`)."""
    name = f"bench-rl-{label}"
    out = tree / "runs" / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for f in ("demos.jsonl", "demos.report.json"):  # the same expert report: the same templates and seeds
        shutil.copy(ckpt.parent.parent / f, out / f)
    requests = out / "engine_requests.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PROBE), os.environ.get("PYTHONPATH")])),
        "WEBAGENT_ENGINE_PROBE": str(requests),
    }
    sets = ["phases=[rl]", f"model.path={ckpt}", f"rl.iterations={iterations}", "learner.checkpoint_every=0"]
    wall = driver(CONFIG, name, sets, out.parent / f"{name}.log", cwd=tree, env=env)
    rows = [r for r in read_log(out / "log.jsonl") if r.get("phase") == "rl"]
    reqs = read_log(requests)
    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # the final RL checkpoint is not what is measured
    if len(rows) < 2:
        raise RuntimeError(f"{name}: {len(rows)} RL records in its log; 2 or more are needed")
    codes = {str(Path(r["code"]).resolve()) for r in reqs}
    if codes != {
        str((tree / "rollout_workers" / "inference.py").resolve())
    }:  # the engine must run the arm's own code
        raise RuntimeError(f"{name}: the engine's requests came from {codes or 'nowhere'}, not from {tree}")
    return {"label": label, "driver_wall_s": wall, **figures(rows, reqs)}


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of [start, end] intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def figures(rows: list[dict[str, Any]], reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """An arm's figures from its RL log records and its engine's requests (module docstring)."""
    steady = rows[1:]
    wall = rows[-1]["time"] - rows[0]["time"]
    k = len(steady)
    episodes = sum(r["rollout"]["episodes"] for r in steady)
    turns = sum(r["rollout"]["episodes"] * (r["rollout"]["turns_per_episode"] or 0) for r in steady)
    split = {
        part: statistics.fmean(r[key]["seconds"] or 0 for r in steady)
        for part, key in (("rollouts", "rollout"), ("learner", "learner"), ("push", "push"))
    }
    split["idle"] = wall / k - sum(split.values())
    # groups the learner got with outcomes that differ (AdvantageStats.signal_groups, from the logged fields, which
    # 04625e0 logs too): the signal the minutes bought
    adv = [r["learner"].get("advantages") or {} for r in steady]
    mixed = sum(a.get("groups", 0) - a.get("zero_variance_groups", 0) - a.get("empty_groups", 0) for a in adv)
    learner_tokens = sum(r["learner"]["tokens"] for r in steady)
    learner_seconds = sum(r["learner"]["seconds"] for r in steady)
    rl = [q for q in reqs if q["prompt"] > 1 and q["end"] <= rows[-1]["time"]]  # not the 1-token warm-up
    window = [q for q in rl if q["end"] > rows[0]["time"]]
    busy = busy_seconds([(q["end"] - q["seconds"], q["end"]) for q in window])
    all_episodes = sum(r["rollout"]["episodes"] for r in rows)
    prompt, cached = sum(q["prompt"] for q in rl), sum(q["cached"] for q in rl)
    return {
        "iterations": len(rows),
        "steady_iterations": k,
        "episodes_per_min": 60 * episodes / wall,
        "turns_per_min": 60 * turns / wall,
        "episodes_per_rollout_min": 60 * episodes / (k * split["rollouts"]),
        "mixed_groups_per_min": 60 * mixed / wall,
        "seconds_per_iteration": wall / k,
        "split_s": split,
        "learner_tokens_per_s": learner_tokens / learner_seconds if learner_seconds else None,
        "engine_busy_s": busy,
        "engine_busy_share_of_rollouts": busy / (k * split["rollouts"]),
        "prefill_tokens_per_s": sum(q["prompt"] - q["cached"] for q in window) / busy if busy else None,
        "decode_tokens_per_s": sum(q["generated"] for q in window) / busy if busy else None,
        "requests": len(rl),
        "prompt_tokens_per_episode": prompt / all_episodes,
        "prefill_tokens_per_episode": (prompt - cached) / all_episodes,
        "prefix_cache_hit_rate": cached / prompt if prompt else None,
        "prompt_tokens_mean": statistics.fmean(q["prompt"] for q in rl),
        "completion_tokens_mean": statistics.fmean(q["generated"] for q in rl),
        "success": [r["rollout"]["success"] for r in rows],
        "episodes": [r["rollout"]["episodes"] for r in rows],
    }


def ceilings(ckpt: Path, prompt: int, completion: int, rows: int, repeats: int) -> dict[str, Any]:
    """Bare tokens/s on this machine: a bf16 forward of `rows` prompts (prefill), and bench_learner_options'
    forward + backward + AdamW step with bf16 autocast on `rows` prompt + completion rows (learner)."""
    import random

    import torch
    from bench_learner_options import build, step

    from learner.samples import Sample, batch_logits, collate

    rng = random.Random(0)

    def ids(n: int) -> list[int]:
        return [rng.randrange(100, 40000) for _ in range(n)]

    def timed(fn) -> float:
        fn()  # warm-up
        return statistics.median(_seconds(fn) for _ in range(repeats))

    model, opt = build("fp32", str(ckpt))
    train = collate(
        [Sample(input_ids=ids(prompt + completion), loss_mask=[0] * prompt + [1] * completion)] * rows, 0
    )
    learner_s = timed(lambda: step(model, opt, train, True))
    model = model.to(torch.bfloat16).eval()
    forward = collate([Sample(input_ids=ids(prompt), loss_mask=[0] * (prompt - 1) + [1])] * rows, 0)
    with torch.inference_mode():
        forward_s = timed(lambda: batch_logits(model, forward))
    return {
        "rows": rows,
        "prompt": prompt,
        "completion": completion,
        "threads": torch.get_num_threads(),
        "forward_tokens_per_s": rows * prompt / forward_s,
        "train_tokens_per_s": rows * (prompt + completion) / learner_s,
    }


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def old_tree() -> Path:
    """A detached worktree of OLD in a temporary folder (the caller removes it with `remove_tree`)."""
    where = Path(tempfile.mkdtemp(prefix=f"bench-rl-{OLD}-"))
    where.rmdir()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), OLD], check=True)
    return where


def remove_tree(where: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], check=False)
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False)


ROWS = [  # (figure, key, unit, format)
    ("RL episodes per minute (loop wall)", "episodes_per_min", "/min", ".1f"),
    ("turns per minute (loop wall)", "turns_per_min", "/min", ".1f"),
    ("episodes per minute of rollout time", "episodes_per_rollout_min", "/min", ".1f"),
    ("groups with mixed outcomes trained per minute (loop wall)", "mixed_groups_per_min", "/min", ".2f"),
    ("prompt tokens per episode (sent)", "prompt_tokens_per_episode", "", ".0f"),
    ("prefill tokens per episode (not cached)", "prefill_tokens_per_episode", "", ".0f"),
    ("prefix-cache hit rate (cached / prompt tokens)", "prefix_cache_hit_rate", "", ".3f"),
    ("engine prefill tokens/s (busy time)", "prefill_tokens_per_s", "", ".0f"),
    ("engine decode tokens/s (busy time)", "decode_tokens_per_s", "", ".1f"),
    ("engine busy share of rollout time", "engine_busy_share_of_rollouts", "", ".2f"),
    ("learner tokens/s", "learner_tokens_per_s", "", ".0f"),
    ("seconds per iteration", "seconds_per_iteration", " s", ".1f"),
    ("  rollouts", "split_s.rollouts", " s", ".1f"),
    ("  learner", "split_s.learner", " s", ".1f"),
    ("  push", "split_s.push", " s", ".2f"),
    ("  idle (the rest)", "split_s.idle", " s", ".1f"),
]


def value(fig: dict[str, Any], key: str) -> float | None:
    for part in key.split("."):
        fig = fig.get(part) if isinstance(fig, dict) else None
    return fig  # type: ignore[return-value]


def fmt(v: float | None, spec: str, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def markdown(new: dict[str, Any], old: dict[str, Any], ceil: dict[str, Any]) -> str:
    lines = [
        f"Steady state: {new['steady_iterations']} iteration(s) of this tree, {old['steady_iterations']} of {OLD} "
        "(the first of each left out); per-episode figures over all iterations.",
        "",
        f"| figure | this tree | {OLD} | ratio |",
        "|---|---|---|---|",
    ]
    for figure, key, unit, spec in ROWS:
        a, b = value(new, key), value(old, key)
        ratio = fmt(a / b, ".2f") if a is not None and b else "n/a"
        lines.append(f"| {figure} | {fmt(a, spec, unit)} | {fmt(b, spec, unit)} | {ratio} |")
    lines += ["", "| stage (arm) | measured | ceiling (bare, this machine) | ratio |", "|---|---|---|---|"]
    for stage, key, ck in (
        ("engine prefill tokens/s / bare bf16 forward", "prefill_tokens_per_s", "forward_tokens_per_s"),
        ("learner tokens/s / bare forward+backward", "learner_tokens_per_s", "train_tokens_per_s"),
    ):
        for label, arm_ in (("this tree", new), (OLD, old)):
            v = arm_.get(key)
            ratio = fmt(v / ceil[ck], ".2f") if v is not None else "n/a"
            lines.append(f"| {stage} ({label}) | {fmt(v, '.0f')} | {ceil[ck]:.0f} | {ratio} |")
    return "\n".join(lines)


def headline(new: dict[str, Any], old: dict[str, Any], ceil: dict[str, Any]) -> list[Figure]:
    """The rows `make bench` shows: the issue's target, prefill work per episode, the two stage ceilings."""
    return [
        Figure(
            f"RL episodes/min on the MiniWoB++ preset, this tree / {OLD} (same BC checkpoint, same run)",
            f"{new['episodes_per_min']:.1f}/min",
            f"{old['episodes_per_min']:.1f}/min",
            new["episodes_per_min"] / old["episodes_per_min"],
            ">= 2",
        ),
        Figure(
            f"groups with mixed outcomes trained per minute (the signal), this tree / {OLD}",
            f"{new['mixed_groups_per_min']:.2f}/min",
            f"{old['mixed_groups_per_min']:.2f}/min",
            new["mixed_groups_per_min"] / old["mixed_groups_per_min"]
            if old["mixed_groups_per_min"]
            else None,
        ),
        Figure(
            f"prefill tokens per RL episode, this tree / {OLD} (prefix-cache hit rate "
            f"{fmt(new['prefix_cache_hit_rate'], '.2f')} / {fmt(old['prefix_cache_hit_rate'], '.2f')})",
            f"{new['prefill_tokens_per_episode']:.0f}",
            f"{old['prefill_tokens_per_episode']:.0f}",
            new["prefill_tokens_per_episode"] / old["prefill_tokens_per_episode"],
        ),
        Figure(
            "engine prefill tokens/s (busy time) / bare bf16 forward tokens/s",
            fmt(new["prefill_tokens_per_s"], ".0f"),
            f"{ceil['forward_tokens_per_s']:.0f}",
            new["prefill_tokens_per_s"] / ceil["forward_tokens_per_s"]
            if new["prefill_tokens_per_s"]
            else None,
        ),
        Figure(
            "learner tokens/s in RL / bare forward+backward tokens/s",
            fmt(new["learner_tokens_per_s"], ".0f"),
            f"{ceil['train_tokens_per_s']:.0f}",
            new["learner_tokens_per_s"] / ceil["train_tokens_per_s"] if new["learner_tokens_per_s"] else None,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=3, help="RL iterations per arm (the first is left out)")
    ap.add_argument(
        "--bc-checkpoint", default=None, help="a BC checkpoint (default: bench_overlap's short BC)"
    )
    ap.add_argument(
        "--demos", type=int, default=24, help="expert plays of the short BC run, when one is made"
    )
    ap.add_argument("--ceiling-rows", type=int, default=8, help="rows of the bare forward / backward")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats of each ceiling (median)")
    args = ap.parse_args(argv)
    if args.iterations < 2:
        ap.error("--iterations must be 2 or more (the first iteration is left out)")
    ckpt = (
        Path(args.bc_checkpoint).resolve()
        if args.bc_checkpoint
        else bc_checkpoint(CONFIG, BC_RUN, args.demos, fresh=False)
    )
    for f in ("demos.jsonl", "demos.report.json"):
        if not (ckpt.parent.parent / f).exists():
            raise SystemExit(f"{ckpt}: its run folder {ckpt.parent.parent} has no {f} (the expert report)")
    t0 = time.time()
    new = arm("new", ROOT, ckpt, args.iterations)
    where = old_tree()
    try:
        old = arm("old", where, ckpt, args.iterations)
    finally:
        remove_tree(where)
    completion = max(1, round(new["completion_tokens_mean"]))
    ceil = ceilings(ckpt, round(new["prompt_tokens_mean"]), completion, args.ceiling_rows, args.repeats)
    text = markdown(new, old, ceil)
    print(f"\n{text}\n\n(all of it took {(time.time() - t0) / 60:.1f} min)", flush=True)
    save(
        "rl_throughput",
        headline(new, old, ceil),
        {
            "checkpoint": str(ckpt),
            "old": OLD,
            "arms": {"new": new, "old": old},
            "ceilings": ceil,
            "table": text,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
