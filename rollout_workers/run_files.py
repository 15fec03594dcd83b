"""Where a run folder keeps its trajectories, and reading them back tolerantly; shared by the viewer and the export.

The training driver writes `demos.jsonl` (the expert's BC episodes), `eval_<label>[_sampled].jsonl` (each
evaluation) and `rollouts.jsonl` (every RL iteration, appended); `python -m rollout_workers.evaluate` writes
`eval_<label>.jsonl` too, and `python -m rollout_workers.play` writes `episode.jsonl`. Each RL and evaluation episode carries its phase, label and iteration in `meta`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from common.records import Trajectory, iter_jsonl

# The files in the order a run writes them; any other eval_*.jsonl (a seeds sweep, a test split) follows, sorted.
RUN_ORDER = (
    "episode.jsonl",
    "demos.jsonl",
    "eval_before_bc.jsonl",
    "eval_before_bc_sampled.jsonl",
    "eval_after_bc.jsonl",
    "eval_after_bc_sampled.jsonl",
    "rollouts.jsonl",
    "eval_after_rl.jsonl",
    "eval_after_rl_sampled.jsonl",
)


def trajectory_files(run_dir: Path) -> list[Path]:
    """The run's trajectory files that exist, in run order."""
    run_dir = Path(run_dir)
    known = [run_dir / name for name in RUN_ORDER if (run_dir / name).is_file()]
    others = sorted(p for p in run_dir.glob("eval_*.jsonl") if p.name not in RUN_ORDER and p.is_file())
    return known + others


def iter_trajectories(path: Path) -> Iterator[Trajectory]:
    """A file's trajectories, streamed; a torn line (a run killed mid-write) is skipped and counted on stderr."""
    torn: list[int] = []
    yield from iter_jsonl(path, on_error=lambda n, _msg: torn.append(n))
    if torn:
        print(f"[run] {path}: {len(torn)} torn line(s) skipped (lines {torn[:5]})", file=sys.stderr)
