"""The evaluation phase of a training run: the test split (or `eval.miniwob_seeds`) played greedily (and sampled
where asked), logged, and compared episode by episode with the run's previous evaluation.

    summary = await run_eval(parts, label="after_bc", earlier=["before_bc"])

The episodes are `rollout_workers.evaluate.evaluate`'s (the same as `python -m rollout_workers.evaluate`); this
module adds what a training run records around them: the trajectories (eval_<label>.jsonl), the log record with the
blind and constant-answer baselines, the Prometheus gauges, and the paired difference to the previous evaluation.
"""

from __future__ import annotations

from typing import Any

from learner.run_parts import RunParts
from rollout_workers.metrics import RolloutSummary


async def run_eval(parts: RunParts, label: str, earlier: list[str]) -> RolloutSummary:
    """One evaluation labelled `label` (before_bc | after_bc | after_rl); `earlier`: the labels evaluated before."""
    from rollout_workers.evaluate import evaluate

    cfg, stack, log = parts.cfg, parts.stack, parts.log
    await parts.sync.heal()
    tasks = stack.tasks("test")
    show = cfg.logging.progress
    summary, groups = await evaluate(stack.worker, tasks, cfg, label=label, progress=show)
    log.save_groups(groups, f"eval_{label}.jsonl", phase="eval", label=label)
    record: dict[str, Any] = {"phase": "eval", "label": label, **summary.to_json()}
    if cfg.environment.kind != "miniwob":  # answers a constant scores, successes that never read the page
        from rollout_workers.guessing import blind_successes, constant_answer_baseline

        played = {g.task_id for g in groups}
        evaluated = [t for t in tasks if t.task_id in played]
        record["constant_baseline"] = constant_answer_baseline(stack.tasks("train"), evaluated)
        record["blind"] = blind_successes([t for g in groups for t in g.trajectories], evaluated)
    if cfg.eval.sampled_per_task > 0 and label in cfg.eval.sampled_at:
        sampled, sgroups = await evaluate(
            stack.worker, tasks, cfg, label=f"{label} sampled", progress=show, sampled=True
        )
        log.save_groups(sgroups, f"eval_{label}_sampled.jsonl", phase="eval", label=f"{label}_sampled")
        record.update(
            sampled_success=sampled.success,
            sampled_success_ci95=sampled.success_ci95,
            sampled_episodes=sampled.episodes,
            sampled_temperature=cfg.inference.temperature,
        )
    parts.metrics.record_eval(summary, label)
    log.record(record)
    _log_paired(parts, label, earlier)
    return summary


def _log_paired(parts: RunParts, label: str, earlier: list[str]) -> None:
    """This evaluation against the run's previous one, episode by episode (greedy, and sampled when both have
    it): the paired difference, its 95% bootstrap interval, exact McNemar p and the flips each way."""
    from learner.report import paired_from_files

    earlier = [s for s in earlier if s != label]
    if not earlier:
        return
    for kind in ("greedy", "sampled"):
        d = paired_from_files(parts.out, earlier[-1], label, kind=kind, seed=parts.cfg.seed)
        if d is not None:
            parts.log.record(
                {"phase": "paired", "before": earlier[-1], "after": label, "kind": kind, **d.to_json()}
            )
