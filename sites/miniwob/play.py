"""Play MiniWoB++ episodes with a scripted expert on a browser actor, and score them with the reward checks.

    python -m sites.miniwob experts [--split train] [--seeds 20] [--tasks a,b]    # success rate per expert

`play(actor, task, expert)` is the loop the tests use (reset, next_action, step, until stop or the page is done);
the training driver runs experts inside rollout_workers' episode loop instead.
"""

from __future__ import annotations

from typing import Any

from common import records as R
from reward.checks import miniwob as miniwob_check
from sites.tasks.steps import ExpertError


def play(actor: Any, task: Any, expert: Any, max_steps: int = 20) -> tuple[R.CheckResult, list[str]]:
    """One episode; returns the `miniwob` check of its final state and the expert's reasons, in order."""
    obs = actor.reset(task)
    reasons: list[str] = []
    for _ in range(max_steps):
        try:
            action, why = expert.next_action(obs)
        except ExpertError as e:
            reasons.append(f"expert stuck: {e}")
            break
        reasons.append(why)
        if isinstance(action, R.Stop):
            break
        obs = actor.step(action)
    return miniwob_check(actor.final_state().miniwob), reasons


def success_rates(actor: Any, tasks: list[Any]) -> dict[str, tuple[int, int]]:
    """task name -> (successes, episodes) over `tasks` that have an expert."""
    from sites.miniwob.experts import expert_for

    out: dict[str, tuple[int, int]] = {}
    for task in tasks:
        expert = expert_for(task)
        if expert is None:
            continue
        check, _ = play(actor, task, expert)
        ok, n = out.get(task.miniwob.task, (0, 0))
        out[task.miniwob.task] = (ok + (check.score == 1.0), n + 1)
    return out
