"""The driver's progress through the phases of a run, kept so that a resubmitted run continues exactly.

    progress = Progress.load(run_dir) or Progress()
    ... run phase i ...
    progress.next_phase, progress.stage = i + 1, "after_bc"; progress.save(run_dir)   # learner/train.py

A phase counts as done only after its results are on disk (the BC checkpoint, the evaluation's log record), so a
run killed at any point and submitted again skips every finished phase, re-runs the interrupted one, and a finished
run changes nothing. RL's own position is the learner's checkpoint (its RL step count and the task sampler's state,
kept in the checkpoint's `extra`); records of RL iterations after that checkpoint are dropped from the logs on
resume, because those iterations run again. A resubmitted run may carry other settings than the killed one
(`--set rl.iterations=15`): `changed_settings` names them, so the driver says so and keeps the old config.json.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rollout_workers.metrics import RolloutSummary

FILE = "progress.json"


@dataclass
class Progress:
    next_phase: int = 0  # index into cfg.phases of the first phase not finished
    stage: str = "before_bc"  # the label of the next evaluation
    evals: dict[str, RolloutSummary] = field(default_factory=dict)  # label -> a finished evaluation
    bc_checkpoint: str | None = None
    finished: bool = False

    @classmethod
    def load(cls, run_dir: str | Path) -> Progress | None:
        path = Path(run_dir) / FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        data["evals"] = {k: RolloutSummary.from_json(v) for k, v in (data.get("evals") or {}).items()}
        return cls(**data)

    def save(self, run_dir: str | Path) -> None:
        """Atomically: a temp file, fsynced, renamed over the old one."""
        path = Path(run_dir) / FILE
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(asdict(self), f, indent=1, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def changed_settings(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> list[str]:
    """The settings that differ between two configs as config.json holds them, one leaf each in dotted form
    ("rl.iterations: 20 -> 15"); a key on one side only reads "(absent)" on the other."""
    changes: list[str] = []
    for key in [*before, *(k for k in after if k not in before)]:
        name = f"{prefix}{key}"
        old, new = before.get(key, "(absent)"), after.get(key, "(absent)")
        if isinstance(old, dict) and isinstance(new, dict):
            changes += changed_settings(old, new, f"{name}.")
        elif old != new:
            changes.append(f"{name}: {json.dumps(old)} -> {json.dumps(new)}")
    return changes


def drop_iterations(path: Path, since: int, *, trajectories: bool) -> int:
    """Remove from a JSONL file the RL records of iterations >= `since` (they are about to run again); returns the
    number removed. Log records carry `phase`/`iteration`; trajectories carry them in `meta`. Torn lines are kept."""
    if not path.exists():
        return 0
    kept, dropped = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
                tag = rec.get("meta", {}) if trajectories else rec
                stale = tag.get("phase") == "rl" and int(tag.get("iteration", -1)) >= since
            except (ValueError, AttributeError, TypeError):
                stale = False
            if stale:
                dropped += 1
            else:
                kept.append(line)
    if dropped:
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, path)
    return dropped
