"""A run's records: every phase's record to log.jsonl (and the trackers), a brief line on the console, trajectories.

    log = RunLog(out_dir, cfg)
    log.record({"phase": "rl", "iteration": 3, ...})     # log.jsonl + TensorBoard / W&B / MLflow + one console line
    log.save_groups(groups, "rollouts.jsonl", append=True, phase="rl", iteration=3)

log.jsonl is what the report, the viewer and a resumed run read; the trackers get exactly what it holds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from common.config import TrainConfig
from common.records import TrajectoryGroup, dump_jsonl
from learner.trackers import Trackers

# The keys of a record the console line shows as they are.
BRIEF_KEYS = (
    "phase",
    "label",
    "iteration",
    "success",
    "success_ci95",
    "loss",
    "demos",
    "loss_first",
    "loss_last",
    "before",
    "after",
    "kind",
    "difference",
    "ci95",
    "gained",
    "lost",
    # an rl_budget record: where the RL phase stopped against rl.time_budget_min
    "iterations",
    "of",
    "budget_min",
    "used_min",
    "longest_min",
)


def brief(record: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The console's view of a record: its headline keys, and for an RL iteration its success, loss, groups kept
    and `seconds` since the previous record."""
    out = {k: v for k, v in record.items() if k in BRIEF_KEYS}
    if "rollout" in record:
        out["success"] = record["rollout"]["success"]
        out["prompt_tokens"] = record["rollout"].get("prompt_tokens_mean")
        out["loss"] = record.get("learner", {}).get("loss")
        out["no_signal"] = record.get("learner", {}).get("no_signal", False)
        sampling = record.get("sampling") or {}
        out["groups"] = f"{sampling.get('kept')}/{sampling.get('drawn')} kept"
        if sampling.get("expert_members"):
            out["expert"] = f"{sampling['expert_solved']}/{sampling['expert_members']} solved"
        out["seconds"] = round(seconds, 1)
    if "sampled_success" in record:
        out["sampled_success"] = record["sampled_success"]
    return out


class RunLog:
    """log.jsonl, the trackers (set once the run knows whether it resumes) and the run's trajectory files."""

    def __init__(self, out: Path, cfg: TrainConfig) -> None:
        self.out = out
        self.save_trajectories = cfg.logging.save_trajectories
        # TensorBoard / W&B / MLflow: every record, once the run knows whether it resumes
        self.trackers: Trackers | None = None
        self._last = time.time()  # the console's seconds per RL iteration

    def record(self, record: dict[str, Any]) -> None:
        """Append `record` (timestamped) to log.jsonl and the trackers, and print its brief view."""
        record = {"time": time.time(), **record}
        line = json.dumps(record, default=str)
        with open(self.out / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(line + "\n")
        if self.trackers is not None:
            self.trackers.log(json.loads(line))  # what log.jsonl holds, no more
        shown = brief(record, record["time"] - self._last)
        self._last = record["time"]
        print(f"[train] {json.dumps(shown, default=str)}", flush=True)

    def save_groups(
        self, groups: list[TrajectoryGroup], name: str, append: bool = False, **tags: Any
    ) -> None:
        """Trajectories as JSONL, each tagged in `meta` with `tags` (phase, iteration) for resume and the viewer."""
        if self.save_trajectories:
            trajs = [t for g in groups for t in g.trajectories]
            for t in trajs:
                t.meta.update(tags)
            dump_jsonl(trajs, str(self.out / name), append=append)

    def close(self) -> None:
        if self.trackers is not None:
            self.trackers.close()
