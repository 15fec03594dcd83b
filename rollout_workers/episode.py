"""One episode: observation -> prompt ids -> engine -> parsed action -> browser step, until stop or max turns.

Each live episode awaits only its own engine call and browser step, so episodes of one group (and of many groups)
advance independently: no lockstep turn batching; the engine batches whatever requests are in flight.
Token exactness: the prompt ids stored on each Turn are the ids sent to the engine, and the completion ids are the
engine's own; the prompt builder splices earlier completions in as ids.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from common.actions import try_parse
from common.records import FinalState, Observation, Stop, Trajectory, Turn
from common.remote import call
from common.tasks import Task


@dataclass
class Sampling:
    max_tokens: int
    temperature: float
    top_p: float = 1.0


@dataclass
class EpisodeResult:
    trajectory: Trajectory
    final: FinalState | None  # None when the episode failed before a final state could be read


class InfraFailure(Exception):
    """A failure of the harness (browser actor died, reset failed, step hung past its limit), not of the agent."""


async def run_episode(
    task: Task,
    *,
    browser: Any,
    router: Any,
    builder: Any,
    sampling: Sampling,
    max_turns: int,
    grammar: str,
    thinking: bool,
    sample_idx: int = 0,
    sandbox: str | None = None,
    step_timeout: float = 60.0,
    max_context: int | None = None,
) -> EpisodeResult:
    """Play one episode; infrastructure failures are recorded on the trajectory (`failure`), never raised."""
    traj = Trajectory(task_id=task.task_id, sample_idx=sample_idx, intent=task.intent, sites=list(task.sites))
    episode_id = f"{task.task_id}#{sample_idx}#{uuid.uuid4().hex[:8]}"
    try:
        obs: Observation = await call(browser, "reset", task, sandbox, episode_id, timeout=step_timeout * 2)
        for index in range(max_turns):
            obs, done = await _turn(
                traj,
                index,
                task,
                obs,
                browser,
                router,
                builder,
                sampling,
                grammar,
                thinking,
                episode_id,
                step_timeout,
                max_context,
            )
            if done:
                break
        else:
            traj.termination = "max_turns"
        final: FinalState = await call(browser, "final_state", timeout=step_timeout)
    except Exception as e:  # noqa: BLE001 - any harness failure makes the episode (and its group) re-runnable
        traj.failure = f"{type(e).__name__}: {e}"[:500]
        traj.termination = "error"
        return EpisodeResult(traj, None)
    finally:
        release = getattr(router, "release", None)
        if release is not None:
            release(episode_id)
    traj.final_url = final.url
    final = final.model_copy(update={"answer": traj.answer})
    return EpisodeResult(traj, final)


async def _turn(
    traj,
    index,
    task,
    obs,
    browser,
    router,
    builder,
    sampling,
    grammar,
    thinking,
    episode_id,
    step_timeout,
    max_context,
):
    t0 = time.perf_counter()
    prompt_ids = builder.build(task.intent, traj.turns, obs)
    t_prompt = time.perf_counter() - t0
    budget = sampling.max_tokens
    if max_context is not None:
        room = max_context - len(prompt_ids)
        budget = min(budget, room)
        if room < min(
            16, sampling.max_tokens
        ):  # the history no longer fits: end the episode (as at max turns)
            traj.termination = "max_turns"
            traj.meta["context_overflow"] = True
            return obs, True
    res = await router.generate(
        episode_id, prompt_ids, max_tokens=budget, temperature=sampling.temperature, top_p=sampling.top_p
    )
    text = builder.decode(res.completion_ids)
    action, parse_error = try_parse(text, grammar=grammar, thinking=thinking)
    turn = Turn(
        index=index,
        observation=obs,
        prompt_ids=prompt_ids,
        completion_ids=list(res.completion_ids),
        logprobs=list(res.logprobs),
        completion_text=text,
        finish_reason=res.finish_reason,
        action=action,
        parse_error=parse_error,
        weight_version=res.weight_version,
        timings={"prompt": t_prompt, "generate": res.seconds},
    )
    traj.turns.append(turn)
    if action is None:
        # A bad action is data: the page is unchanged and the prompt builder shows the parse error in the next
        # turn's feedback (STYLE 8).
        return obs.model_copy(update={"last_action_error": None}), False
    if isinstance(action, Stop):
        traj.answer = action.answer
        traj.termination = "stop"
        return obs, True
    t1 = time.perf_counter()
    try:
        nxt: Observation = await call(browser, "step", action, timeout=step_timeout)
    except TimeoutError as e:
        raise InfraFailure(f"browser step exceeded {step_timeout:.0f}s") from e
    turn.timings["step"] = time.perf_counter() - t1
    if nxt.infra_error:
        traj.meta.setdefault("recovered_infra_errors", []).append(nxt.infra_error)
    return nxt, False
