"""One episode: observation -> prompt ids -> policy -> parsed action -> browser step, until stop or max turns.

    settings = EpisodeSettings.from_config(cfg)            # once per run
    result = await run_episode(task, browser=BrowserHandle(actor), policy=ModelPolicy(router, sampling),
                               builder=builder, settings=settings, sandbox=token)

This is the only episode loop: the model and the scripted expert are both policies (rollout_workers/policy.py), so a
demonstration is played, cut, recorded, retried and scored exactly like a rollout. Each live episode awaits only its
own policy call and browser step, so episodes of one group (and of many groups) advance independently: no lockstep
turn batching; the engine batches whatever requests are in flight.
Token exactness: the prompt ids stored on each Turn are the ids the policy was given, and the completion ids are
the engine's own (or, for the expert, its written reply tokenized once); the prompt builder splices earlier
completions in as ids. The policy's reply is parsed with the run's grammar in both cases.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from common.actions import try_parse
from common.config import TrainConfig
from common.prompts import PromptBuilder
from common.records import FinalState, Observation, Stop, Trajectory, Turn
from common.tasks import Task
from rollout_workers.handles import BrowserHandle
from rollout_workers.policy import Policy, PolicyGaveUp
from rollout_workers.router import EngineDown

# Fewer free tokens than this after the prompt: the history no longer fits, the episode ends (as at max turns).
MIN_REPLY_ROOM = 16


@dataclass
class EpisodeResult:
    trajectory: Trajectory
    final: FinalState | None  # None when the episode failed before a final state could be read


class InfraFailure(Exception):
    """A failure of the harness (browser actor died, reset failed, step hung past its limit), not of the agent."""


@dataclass(frozen=True)
class EpisodeSettings:
    """What every episode of a run plays by; built once from the config (`from_config`)."""

    max_turns: int  # turns before the episode ends (termination "max_turns")
    grammar: str  # the action grammar replies are parsed with
    thinking: bool  # replies are <think>...</think><answer>...</answer>
    max_new_tokens: int  # reply budget per turn (cut to the context room left)
    step_timeout: float = 60.0  # seconds a browser step may take before the episode is an infra failure
    max_context: int | None = None  # prompt + reply tokens; a prompt leaving less room ends the episode
    max_bad_replies: int = 0  # > 0: end after that many unparseable replies in a row

    @classmethod
    def from_config(cls, cfg: TrainConfig, max_turns: int | None = None) -> EpisodeSettings:
        return cls(
            max_turns=max_turns or cfg.scheduling.max_turns,
            grammar=cfg.prompt.grammar,
            thinking=cfg.prompt.thinking,
            max_new_tokens=cfg.inference.max_new_tokens,
            # Above the actor's own limit (step_timeout_s x 3 + 30 s, recovery included), so a hung page costs a
            # step the actor recovers from, not the group.
            step_timeout=cfg.browser.step_timeout_s * 3 + 60,
            max_context=cfg.model.max_context,
            max_bad_replies=cfg.scheduling.max_bad_replies,
        )


@dataclass
class _Episode:
    """What every turn of one episode needs."""

    task: Task
    traj: Trajectory
    episode_id: str
    browser: BrowserHandle
    policy: Policy
    builder: PromptBuilder
    settings: EpisodeSettings
    bad_in_a_row: int = 0


async def run_episode(
    task: Task,
    *,
    browser: BrowserHandle,
    policy: Policy,
    builder: PromptBuilder,
    settings: EpisodeSettings,
    sample_idx: int = 0,
    sandbox: str | None = None,
) -> EpisodeResult:
    """Play one episode; infrastructure failures are recorded on the trajectory (`failure`), never raised.
    `settings.max_bad_replies` > 0 ends the episode (termination "bad_replies") after that many replies in a row
    with no parseable action: under greedy decoding an unchanged page mostly gives the same unparseable reply
    again. The trajectory's `source` is the policy's ("policy" | "expert")."""
    traj = Trajectory(
        task_id=task.task_id,
        sample_idx=sample_idx,
        intent=task.intent,
        sites=list(task.sites),
        source=policy.source,
    )
    episode_id = f"{task.task_id}#{sample_idx}#{uuid.uuid4().hex[:8]}"
    ep = _Episode(task, traj, episode_id, browser, policy, builder, settings)
    step_timeout = settings.step_timeout
    try:
        t0 = time.perf_counter()
        obs = await browser.reset(task, sandbox, episode_id, timeout=step_timeout * 2)
        traj.timings["reset"] = time.perf_counter() - t0
        for index in range(settings.max_turns):
            obs, done = await _turn(ep, index, obs)
            if done:
                break
        else:
            traj.termination = "max_turns"
        t0 = time.perf_counter()
        final: FinalState = await browser.final_state(timeout=step_timeout)
        traj.timings["final_state"] = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 - any harness failure makes the episode (and its group) re-runnable
        traj.failure = f"{type(e).__name__}: {e}"[:500]
        traj.termination = "error"
        # whose failure: the group re-run replaces the browser actor only when the browser side failed
        traj.meta["failed_part"] = "engine" if isinstance(e, EngineDown) else "browser"
        return EpisodeResult(traj, None)
    finally:
        policy.end(ep.episode_id)
    traj.final_url = final.url
    final = final.model_copy(update={"answer": traj.answer})
    return EpisodeResult(traj, final)


async def _turn(ep: _Episode, index: int, obs: Observation) -> tuple[Observation, bool]:
    traj = ep.traj
    t0 = time.perf_counter()
    prompt_ids = ep.builder.build(ep.task.intent, traj.turns, obs)
    t_prompt = time.perf_counter() - t0
    settings = ep.settings
    budget = settings.max_new_tokens
    if settings.max_context is not None:
        room = settings.max_context - len(prompt_ids)
        if room < min(MIN_REPLY_ROOM, budget):
            traj.termination = "max_turns"
            traj.meta["context_overflow"] = True
            return obs, True
        budget = min(budget, room)
    try:
        reply = await ep.policy.act(
            ep.episode_id, ep.task, prompt_ids, ep.builder.visible(obs, traj.turns), budget
        )
    except PolicyGaveUp as e:
        traj.termination = "gave_up"
        traj.meta["gave_up"] = str(e)[:300]
        return obs, True
    text = reply.text or ep.builder.decode(reply.completion_ids)
    action, parse_error = try_parse(text, grammar=settings.grammar, thinking=settings.thinking)
    turn = Turn(
        index=index,
        observation=obs,
        prompt_ids=prompt_ids,
        completion_ids=list(reply.completion_ids),
        logprobs=list(reply.logprobs),
        completion_text=text,
        finish_reason=reply.finish_reason,
        action=action,
        parse_error=parse_error,
        weight_version=reply.weight_version,
        timings={"prompt": t_prompt, "generate": reply.seconds},
    )
    traj.turns.append(turn)
    if action is None:
        # A bad action is data: the page is unchanged and the prompt builder shows the parse error in the next
        # turn's feedback.
        ep.bad_in_a_row += 1
        if settings.max_bad_replies and ep.bad_in_a_row >= settings.max_bad_replies:
            traj.termination = "bad_replies"
            return obs, True
        return obs.model_copy(update={"last_action_error": None}), False
    ep.bad_in_a_row = 0
    if isinstance(action, Stop):
        traj.answer = action.answer
        traj.termination = "stop"
        return obs, True
    t1 = time.perf_counter()
    try:
        nxt = await ep.browser.step(action, timeout=settings.step_timeout)
    except TimeoutError as e:
        raise InfraFailure(f"browser step exceeded {settings.step_timeout:.0f}s") from e
    turn.timings["step"] = time.perf_counter() - t1
    if nxt.infra_error:
        traj.meta.setdefault("recovered_infra_errors", []).append(nxt.infra_error)
    if nxt.done:  # the page ended the episode itself (MiniWoB++ gave its reward)
        traj.termination = "stop"
        return nxt, True
    return nxt, False
