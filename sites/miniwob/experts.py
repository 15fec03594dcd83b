"""Scripted experts for MiniWoB++ tasks: behaviour-cloning demonstrations from the observations the model sees.

    expert = expert_for(task)                  # None when the task has no expert
    action, why = expert.next_action(obs)      # common.records Action + a one-line reason; ExpertError when stuck

The interface is `sites.tasks.steps.Script`'s. An expert reads element ids only from `obs.text` (the simplified-HTML
observation, parsed with `sites.tasks.steps.parse_elements`) and facts only from the instruction (`task.intent`) and
that text; it acts only through Action records. Each solver is a generator: it yields `(action, reason)` and, when
resumed, reads the observation that action produced from its `View`. Once the page has given its reward
(`obs.done`) the expert answers `stop`. Accessibility-tree observations are refused (the parser reads HTML).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from common import records as R
from sites.miniwob import solvers_click, solvers_forms, solvers_text  # noqa: F401 - importing registers their solvers
from sites.miniwob.expert_kit import SOLVERS, Solver, Step, View
from sites.tasks.steps import ExpertError

__all__ = ["SOLVERS", "MiniwobExpert", "expert_for"]


class MiniwobExpert:
    """One episode's expert: `next_action(obs) -> (Action, reason)`, the interface of `sites.tasks.steps.Script`."""

    def __init__(self, name: str, instruction: str, solver: Solver) -> None:
        self.name, self.instruction, self.solver = name, instruction, solver
        self.view = View()
        self._steps: Generator[Step, None, None] | None = None

    def next_action(self, obs: R.Observation) -> Step:
        if obs.done:
            return R.Stop(answer=""), "the page has given its reward: the episode is over"
        if obs.mode != "html":
            raise ExpertError(
                "the MiniWoB++ experts read the simplified-HTML observation (browser.observation=html)"
            )
        if obs.last_action_error and self._steps is not None:
            raise ExpertError(f"the previous action failed: {obs.last_action_error}")
        self.view.obs = obs
        if self._steps is None:
            self._steps = self.solver(self.instruction, self.view)
        try:
            return next(self._steps)
        except StopIteration:
            raise ExpertError(f"{self.name}: the script ended but the page did not end the episode") from None


def expert_for(task: Any) -> MiniwobExpert | None:
    """The expert of a MiniWoB++ task (a `common.tasks.Task` with a `miniwob` block), or None."""
    spec = getattr(task, "miniwob", None)
    if spec is None or spec.task not in SOLVERS:
        return None
    return MiniwobExpert(spec.task, task.intent, SOLVERS[spec.task])
