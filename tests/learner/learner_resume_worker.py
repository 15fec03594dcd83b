"""Subprocess for test_checkpoint.py: trains a tiny model with BC, checkpointing after steps 1 and 2, then trains on
without checkpoints and SIGKILLs itself in the middle of writing the checkpoint of iteration KILL_AT (an injected
fault: weights and optimizer state are on disk, the COMPLETE marker and the rename are not).

    python tests/learner/learner_resume_worker.py MODEL_DIR OUT_DIR KILL_AT
Prints one JSON line per step: {"iteration": n, "loss": x} then {"saved": n}.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from common.config import TrainConfig, load_config
from common.records import Observation, Trajectory, Turn


def demo() -> Trajectory:
    def turn(i: int, prompt: list[int], completion: list[int]) -> Turn:
        return Turn(index=i, observation=Observation(text="o"), prompt_ids=prompt, completion_ids=completion)

    return Trajectory(
        task_id="resume",
        turns=[turn(0, list(range(20, 50)), [60, 61, 62]), turn(1, list(range(20, 80)), [90, 91])],
    )


def config(out_dir: str) -> TrainConfig:
    return load_config(
        None,
        [
            f"logging.output_dir={out_dir}",
            "learner.zero_stage=3",
            "learner.resume=auto",
            "learner.keep_checkpoints=2",
            "bc.lr=1e-3",
            "rl.kl_beta=0.0",
        ],
    )


def main() -> None:
    model_dir, out_dir, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    from learner import checkpoint
    from learner.actor import LearnerActor

    real_commit = checkpoint.commit

    def crashing_commit(tmp, state):
        if state.iteration == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_commit(tmp, state)

    checkpoint.commit = crashing_commit
    learner = LearnerActor(config(out_dir), model_path=model_dir)
    while True:
        m = learner.bc_step([demo()])
        print(json.dumps({"iteration": m.iteration, "loss": m.loss}), flush=True)
        if learner.iteration <= 2 or learner.iteration == kill_at:
            learner.save_checkpoint()
            print(json.dumps({"saved": learner.iteration}), flush=True)


if __name__ == "__main__":
    main()
