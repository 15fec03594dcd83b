"""The scripted expert: solves bundled-site tasks in a real browser, through the same actions and observations a
model gets, to make behaviour-cloning demonstrations.

    python -m sites demos --split train --out demos.jsonl [--limit N] [--sites shopping] [--browsers 3]

Each template in `sites.tasks` carries a script (`solve(inst)`, steps from `sites.tasks.steps`) that reads element
ids out of each observation's text, or navigates by URL as a user who knows the site would, and ends with
`stop [answer]`. `run_expert_episode` plays one task on a browser actor (a local `BrowserActor` or a Ray handle:
calls go through `rollout_workers.remote.call`); every turn keeps the observation, the action and a one-line reason
(`completion_text`, used as the thought in the thinking format). `generate_demos` runs many episodes concurrently,
one sandbox each, scores them with the reward actor's real checks, and keeps only those scored 1 -- the training
driver (`learner/train.py`) calls it when no demonstration file is configured.
Unlike the paper (which distils demonstrations from a stronger model), demonstrations here are scripted, so they
are cheap and exactly right, but less varied in wording and order.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

from common.records import FinalState, Reward, Stop, Trajectory, Turn
from common.remote import call
from common.tasks import Task
from sites.tasks import find_instance
from sites.tasks.steps import ExpertError, Script, base_url

log = logging.getLogger(__name__)
MAX_STEPS = 30
STEP_TIMEOUT_S = 90.0


async def run_expert_episode(
    task: Task, browser: Any, *, sandbox: str | None = None, sample_idx: int = 0, max_steps: int = MAX_STEPS
) -> tuple[Trajectory, FinalState | None]:
    """Play one task with its template's script. An expert that cannot go on ends the episode with
    `termination="error"` and `meta["expert_error"]`; a harness failure sets `failure` (and no final state)."""
    template, inst = find_instance(task.task_id)
    traj = Trajectory(
        task_id=task.task_id,
        sample_idx=sample_idx,
        intent=task.intent,
        sites=list(task.sites),
        source="expert",
        meta={"template_id": template.id, "kind": template.kind},
    )
    episode_id = f"expert-{task.task_id}-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    try:
        obs = await call(browser, "reset", task, sandbox, episode_id, timeout=STEP_TIMEOUT_S)
        script = Script(template.solve(inst), base_url(obs.url))
        for index in range(max_steps):
            try:
                action, why = script.next_action(obs)
            except ExpertError as e:
                traj.termination, traj.meta["expert_error"] = "error", str(e)[:300]
                break
            traj.turns.append(Turn(index=index, observation=obs, action=action, completion_text=why))
            if isinstance(action, Stop):
                traj.answer, traj.termination = action.answer, "stop"
                break
            t0 = time.perf_counter()
            obs = await call(browser, "step", action, timeout=STEP_TIMEOUT_S)
            traj.turns[-1].timings["step"] = time.perf_counter() - t0
        else:
            traj.termination = "max_turns"
        final: FinalState = await call(browser, "final_state", timeout=STEP_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - a harness failure is recorded on the trajectory, never raised
        traj.failure, traj.termination = f"{type(e).__name__}: {e}"[:500], "error"
        return traj, None
    traj.final_url = final.url
    traj.meta["seconds"] = round(time.perf_counter() - started, 2)
    return traj, final.model_copy(update={"answer": traj.answer})


async def _score(rewarder: Any, task: Task, traj: Trajectory, final: FinalState | None) -> None:
    if final is None:
        return
    try:
        reward: Reward = await call(rewarder, "ascore", task, final)
    except Exception as e:  # noqa: BLE001 - an unscorable episode is kept out of the demonstrations
        traj.meta["reward_error"] = f"{type(e).__name__}: {e}"[:300]
        return
    traj.reward, traj.checks = reward.score, reward.checks
    if reward.error:
        traj.meta["reward_error"] = reward.error


async def run_demos(
    browsers: list[Any], rewarder: Any, tasks: list[Task], sandboxes: Any | None = None, on_done: Any = None
) -> list[Trajectory]:
    """Every task once, each browser working through a shared queue; all trajectories, scored, in task order."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for k in range(len(tasks)):
        queue.put_nowait(k)
    out: list[Trajectory | None] = [None] * len(tasks)

    async def worker(browser: Any) -> None:
        while not queue.empty():
            k = queue.get_nowait()
            token = await sandboxes.new() if sandboxes is not None else None
            try:
                traj, final = await run_expert_episode(tasks[k], browser, sandbox=token)
                await _score(rewarder, tasks[k], traj, final)
            finally:
                if token is not None:
                    await sandboxes.drop(token)
            out[k] = traj
            if on_done is not None:
                on_done(traj)

    await asyncio.gather(*(worker(b) for b in browsers))
    return [t for t in out if t is not None]


async def generate_demos(stack: Any, tasks: list[Task], cfg: Any = None) -> list[Trajectory]:
    """Demonstrations for `tasks` (bundled-site tasks; others are skipped): the episodes the reward checks score 1.

    `stack.pool` lends the browser actors, `stack.worker.sandboxes` gives one sandbox per episode (or None),
    `stack.rewarders[0]` scores them."""
    known, skipped = [], 0
    for t in tasks:
        try:
            find_instance(t.task_id)
            known.append(t)
        except (KeyError, ValueError):
            skipped += 1
    if skipped:
        log.warning(
            "expert: %d task(s) are not bundled-site template tasks and get no demonstration", skipped
        )
    sandboxes = getattr(getattr(stack, "worker", None), "sandboxes", None)
    async with stack.pool.lease(stack.pool.size) as leased:
        trajs = await run_demos([a for _, a in leased], stack.rewarders[0], known, sandboxes)
    kept = [t for t in trajs if t.reward == 1.0]
    log.info("expert: %d/%d demonstrations scored 1", len(kept), len(trajs))
    return kept
