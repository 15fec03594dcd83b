"""The learner: behaviour cloning and M-GRPO on DeepSpeed, checkpoints, weight push, the training driver.

    algos.py       pure functions: group-relative advantages, M-GRPO loss, BC loss, token logprobs
    samples.py     token-exact training rows from Turns, micro-batches by a token budget
    engine.py      the DeepSpeed engine on GPUs (bf16, ZeRO, FlashAttention-2) and CPUs (DS_ACCELERATOR=cpu, gloo)
    actor.py       LearnerActor (a plain class; Ray wraps it at launch)
    checkpoint.py  crash-safe Hugging Face checkpoint folders, resume: auto
    weight_sync.py pushes the learner's weights to the inference actors
    curriculum.py  which train tasks RL draws: filters, per-task rest, templates weighted by their mixed-group share
    collect.py     one RL iteration's draws: dynamic sampling, expert-guided members, what the update gets
    train.py       the driver: phases (eval, BC, RL), evaluations paired episode by episode, logging
    trackers.py    every log record also to TensorBoard / W&B / MLflow, one run each across resumes
    report.py      report.md, curve.png and viewer.html of a run (`python -m learner.report RUN_DIR`)
    export.py      a run's trajectories as Parquet / JSONL (`python -m learner.report export RUN_DIR`), and back

`from learner import LearnerActor` is resolved lazily so that importing the package stays cheap.
"""

from typing import Any

__all__ = ["LearnerActor"]


def __getattr__(name: str) -> Any:
    if name == "LearnerActor":
        from learner.actor import LearnerActor

        return LearnerActor
    raise AttributeError(name)
