"""The learner: behaviour cloning and M-GRPO on DeepSpeed, checkpoints, weight push, the training driver.

The driver (`python -m learner.train`) and its phases:
    train.py          the driver: brings the run up, sequences the phases of `phases`, takes the run down
    run_parts.py      RunParts: what the phases share (config, run folder, stack, learner, metrics, log, sync)
    eval_phase.py     an evaluation of a run, its baselines and the paired difference to the previous one
    bc_phase.py       behaviour cloning, its held-out split, and the (cached) demonstrations
    rl_phase.py       the RL phase: RLPhase.iteration = sample -> roll out -> update -> push -> record
    collect.py        one RL iteration's draws: dynamic sampling, expert-guided members, what the update gets
    curriculum.py     which train tasks RL draws: filters, per-task rest, templates weighted by their mixed-group share
    engine_sync.py    heal and push-retry: the engines in service kept on the learner's weights
    learner_handle.py LearnerHandle: the driver's typed, time-bounded calls into the LearnerActor
    run_log.py        log.jsonl, the trackers, the console line, trajectory files
    progress.py       the driver's progress through the phases, for an exact resume
    run_lock.py       one driver per run folder
The learner actor:
    actor.py          LearnerActor (a plain class; Ray wraps it at launch)
    algos.py          pure functions: group-relative advantages, M-GRPO loss, BC loss, token logprobs
    samples.py        token-exact training rows from Turns, micro-batches by a token budget
    stats.py          what the learner's calls return: StepStats, BCSummary
    engine.py         the DeepSpeed engine on GPUs (bf16, ZeRO, FlashAttention-2) and CPUs (DS_ACCELERATOR=cpu, gloo)
    checkpoint.py     crash-safe Hugging Face checkpoint folders, resume: auto
    weight_sync.py    pushes the learner's weights to the inference actors (file, object store, NCCL)
    bc_data.py        demonstrations from a file, given the token ids of the run's prompt builder
After a run:
    trackers.py       every log record also to TensorBoard / W&B / MLflow, one run each across resumes
    report.py         report.md, curve.png and viewer.html of a run (`python -m learner.report RUN_DIR`)
    export.py         a run's trajectories as Parquet / JSONL (`python -m learner.report export RUN_DIR`), and back

`from learner import LearnerActor` is resolved lazily so that importing the package stays cheap.
"""

from typing import Any

__all__ = ["LearnerActor"]


def __getattr__(name: str) -> Any:
    if name == "LearnerActor":
        from learner.actor import LearnerActor

        return LearnerActor
    raise AttributeError(name)
