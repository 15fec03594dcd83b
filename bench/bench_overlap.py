"""RL iteration throughput with rollouts overlapping the learner update (`scheduling.overlap_with_learner`) against
without: the same driver, preset, policy, seed and tasks.

    .venv/bin/python bench/bench_overlap.py [--config configs/miniwob_cpu.yaml] [--iterations 4] [--checkpoint DIR]

The policy must score some episodes and miss others, or no group has a learning signal and the update is empty.
So it is a BC checkpoint: `--checkpoint`, else the one a short BC run of the preset made here first
(`runs/bench-overlap-bc`: `bc.max_demos`, one epoch; reused by later runs of this bench unless `--fresh-bc`).
Then the driver itself (`python -m learner.train`, phases [rl], from that checkpoint) runs `--iterations` RL
iterations twice, overlap off and on, each in its own process with its own local Ray, both given the BC run's
expert report (so both sample the same templates). Each arm's seconds per iteration are read from its log.jsonl:
the time between its first and its last RL record over the iterations between them, i.e. the steady state (with
overlap the first iteration's rollouts have nothing to overlap). Figure: iterations per minute, on / off.
Writes bench/results/overlap.json (per-iteration rollout, learner and push seconds, groups with signal, lag).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import Figure, save  # noqa: E402

from learner.report import read_log  # noqa: E402


def driver(
    config: str,
    run_name: str,
    sets: list[str],
    log: Path,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> float:
    """One driver run (its own process, its own local Ray) in the tree `cwd` (another commit's worktree runs its
    own code); returns its wall seconds. Fails loudly."""
    cmd = [sys.executable, "-m", "learner.train", "--config", config, "--set", f"logging.run_name={run_name}"]
    for s in ["learner.resume=never", *sets]:
        cmd += ["--set", s]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"the driver exited {rc} ({run_name}); its log ends:\n{tail}")
    return time.perf_counter() - t0


BC_RUN = ROOT / "runs" / "bench-overlap-bc"


def existing_bc_checkpoint(out: Path = BC_RUN) -> Path | None:
    """The BC checkpoint a finished BC run in `out` made (its progress file names it), or None."""
    from learner.progress import Progress

    found = Progress.load(out)
    ckpt = found.bc_checkpoint if found is not None else None
    # the driver writes it relative to the repository
    return ROOT / ckpt if ckpt and (ROOT / ckpt / "COMPLETE").exists() else None


def bc_checkpoint(config: str, out: Path, demos: int, fresh: bool) -> Path:
    """The BC result of a short BC run of the preset (made once, reused unless `fresh`)."""
    if not fresh and (ckpt := existing_bc_checkpoint(out)) is not None:
        print(f"reusing the BC checkpoint {ckpt} (--fresh-bc makes a new one)", flush=True)
        return ckpt
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    seconds = driver(
        config,
        out.name,
        ["phases=[bc]", f"bc.max_demos={demos}", "bc.epochs=1", "learner.checkpoint_every=0"],
        out.parent / f"{out.name}.log",
    )
    print(f"BC run: {seconds:.0f} s", flush=True)
    ckpt = existing_bc_checkpoint(out)
    if ckpt is None:
        raise RuntimeError(f"the BC run in {out} finished without a complete BC checkpoint")
    return ckpt


GROUPS = 4  # mixed groups per RL iteration in both arms


def arm(config: str, name: str, ckpt: Path, bc_run: Path, iterations: int, overlap: bool) -> dict[str, Any]:
    out = ROOT / "runs" / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for f in ("demos.jsonl", "demos.report.json"):  # the same expert report: the same solvable templates
        shutil.copy(bc_run / f, out / f)
    wall = driver(
        config,
        name,
        [
            "phases=[rl]",
            f"model.path={ckpt}",
            f"rl.iterations={iterations}",
            # the bench's own iteration size, so it does not follow the preset's (8 mixed groups since 2026-12-03;
            # even at 4 one arm of 4 iterations took about 10 minutes here: make bench runs 3 per arm and gives
            # this bench 45 minutes, bench/run_all.py)
            f"rl.tasks_per_iteration={GROUPS}",
            f"rl.max_groups_per_iteration={3 * GROUPS}",
            f"scheduling.overlap_with_learner={str(overlap).lower()}",
            "learner.checkpoint_every=0",
        ],
        out.parent / f"{name}.log",
    )
    rows = [r for r in read_log(out / "log.jsonl") if r.get("phase") == "rl"]
    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # the optimizer state is not what is measured
    if len(rows) < 2:
        raise RuntimeError(f"{name}: {len(rows)} RL records in its log; 2 or more are needed")
    per_iteration = (rows[-1]["time"] - rows[0]["time"]) / (len(rows) - 1)
    return {
        "overlap": overlap,
        "wall_seconds": wall,
        "seconds_per_iteration": per_iteration,
        "iterations": len(rows),
        "rollout_seconds": [r["rollout"]["seconds"] for r in rows],
        "learner_seconds": [r["learner"]["seconds"] for r in rows],
        "push_seconds": [r["push"]["seconds"] for r in rows],
        "steps_taken": sum(not r["learner"]["skipped"] for r in rows),
        "lag_max": max(r["learner"]["lag_max"] for r in rows),
        "lagged_samples": sum(r["learner"]["lagged_samples"] for r in rows),
        "success": [r["rollout"]["success"] for r in rows],
        "no_signal_group_share": [r["rollout"]["zero_variance_group_share"] for r in rows],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/miniwob_cpu.yaml")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--checkpoint", default=None, help="a BC checkpoint (default: a short BC run made here)")
    ap.add_argument("--demos", type=int, default=24, help="expert plays of the short BC run")
    ap.add_argument("--fresh-bc", action="store_true", help="make the short BC run again")
    args = ap.parse_args()
    if args.iterations < 2:
        ap.error("--iterations must be 2 or more (the figure is the time between the first and the last)")

    bc_run = BC_RUN
    ckpt = (
        Path(args.checkpoint)
        if args.checkpoint
        else bc_checkpoint(args.config, bc_run, args.demos, args.fresh_bc)
    )
    if args.checkpoint and not (bc_run / "demos.report.json").exists():
        raise SystemExit(
            f"--checkpoint needs the expert report of its BC run in {bc_run}: run once without it"
        )
    arms = {
        key: arm(args.config, f"bench-overlap-{key}", ckpt, bc_run, args.iterations, key == "on")
        for key in ("off", "on")
    }
    for key, a in arms.items():
        print(
            f"overlap {key:3s}: {a['seconds_per_iteration']:.1f} s/iteration (rollouts "
            f"{statistics.mean(a['rollout_seconds']):.1f} s, learner {statistics.mean(a['learner_seconds']):.1f} s, "
            f"push {statistics.mean(a['push_seconds']):.2f} s on average; {a['steps_taken']}/{a['iterations']} "
            f"iterations stepped; lag max {a['lag_max']})",
            flush=True,
        )
    on, off = arms["on"]["seconds_per_iteration"], arms["off"]["seconds_per_iteration"]
    figures = [
        Figure(
            "RL iterations/min, rollouts overlapping the update / not (same driver, policy, tasks)",
            f"{60 / on:.2f}/min",
            f"{60 / off:.2f}/min",
            off / on,
        ),
        Figure(
            "policy versions of lag with overlap on (bound: 1)",
            str(arms["on"]["lag_max"]),
            "1",
            float(arms["on"]["lag_max"]),
            "<= 1",
        ),
    ]
    save("overlap", figures, {"config": args.config, "checkpoint": str(ckpt), "arms": arms})


if __name__ == "__main__":
    main()
