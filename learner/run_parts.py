"""What the phases of a run share: the config, the run folder, the running stack, the learner and the run's log.

    parts = RunParts(cfg, out, stack, learner, metrics, log, sync)
    await run_eval(parts, "before_bc", earlier=[])      # learner/eval_phase.py
    checkpoint = await run_bc(parts)                    # learner/bc_phase.py
    await RLPhase(parts, bc_checkpoint).run(start)      # learner/rl_phase.py

The driver (learner/train.py) builds it once at bring-up and hands it to each phase in turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.config import TrainConfig
from learner.engine_sync import EngineSync
from learner.learner_handle import LearnerHandle
from learner.run_log import RunLog
from rollout_workers.metrics import RayMetrics
from rollout_workers.stack import Stack


@dataclass
class RunParts:
    cfg: TrainConfig
    out: Path  # the run folder (logging.output_dir)
    stack: Stack  # sites, engines + router, browser pool, reward actors, the rollout worker
    learner: LearnerHandle | None  # None for a run without bc or rl phases (evaluations only)
    metrics: RayMetrics  # Prometheus gauges and counters
    log: RunLog  # log.jsonl, trackers, console, trajectory files
    sync: EngineSync  # heal and weight push

    def need_learner(self) -> LearnerHandle:
        """The learner, for a phase that cannot run without one (bc, rl)."""
        if self.learner is None:
            raise RuntimeError("this phase needs the learner: the run was started without bc or rl phases")
        return self.learner
