"""The scripted expert's scripts: which one plays a bundled-site task, built from the task's first observation.

    script = script_for(task, first_obs)        # a sites.tasks.steps.Script
    action, why = script.next_action(obs)       # raises ExpertError when the page lacks what it needs

Each template in `sites.tasks` carries a script (`solve(inst)`, steps from `sites.tasks.steps`) that reads element
ids out of each observation's text, or navigates by URL as a user who knows the site would, and ends with
`stop [answer]`. The expert does not run episodes itself: `rollout_workers.policy.ExpertPolicy` plays it inside the
one episode loop, handing it the observation exactly as the model's prompt shows it (cut to the token budget), and
`rollout_workers.demos` keeps the episodes the reward checks score 1 as behaviour-cloning demonstrations.
Unlike the paper (which distils demonstrations from a stronger model), demonstrations here are scripted, so they
are cheap and exactly right, but less varied in wording and order.
"""

from __future__ import annotations

from typing import Any

from common.records import Observation
from common.tasks import Task
from sites.tasks import find_instance
from sites.tasks.steps import Script, base_url


def script_for(task: Task, first_obs: Observation) -> Any:
    """The script of the task: its bundled template's, or its MiniWoB++ task's solver; KeyError for a task with
    neither."""
    if task.miniwob is not None:
        from sites.miniwob.experts import expert_for

        expert = expert_for(task)
        if expert is None:
            raise KeyError(f"no MiniWoB++ expert for {task.miniwob.task}")
        return expert
    template, inst = find_instance(task.task_id)
    return Script(template.solve(inst), base_url(first_obs.url))
