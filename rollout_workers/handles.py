"""The actor contracts: typed handles to the browser, reward and inference actors.

    browser = BrowserHandle(ray_handle_or_plain_actor)
    obs = await browser.reset(task, sandbox, episode_id, timeout=120)     # -> Observation
    reward = await RewardHandle(reward_actor).score(task, final, timeout=60)
    res = await EngineHandle(engine).generate(prompt_ids, timeout=300, max_tokens=64)

Every crossing into one of these actors goes through a method here, so a reader (and an editor's go-to-definition)
follows the rollout loop into the actor's contract, and each method names the actor method it reaches. A handle
wraps either a Ray actor handle (a run) or the plain actor object (tests, one-process tools); the one time-out
wrapper for both is `common.remote.call`, and this module (with `learner/learner_handle.py` for the learner) is the
only place that names an actor method by string (tests/test_layering.py checks it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterable
from typing import Any, Self, TypeVar

from common.records import Action, FinalState, Observation, Reward
from common.remote import call, is_ray_actor, release
from common.tasks import Task
from rollout_workers.inference import GenerateResult

T = TypeVar("T")


def wait_all(calls: Iterable[Awaitable[T]], timeout: float | None = None) -> list[T]:
    """Handle calls run to completion from synchronous code (launch and teardown, outside any event loop)."""

    async def gather() -> list[T]:
        return list(await asyncio.wait_for(asyncio.gather(*calls), timeout))

    return asyncio.run(gather())


class _Handle:
    """A Ray actor handle or the plain actor object, called the same way."""

    def __init__(self, target: object) -> None:
        self.target = target  # a Ray ActorHandle, or the plain actor object itself

    @classmethod
    def of(cls, target: object) -> Self:
        """`target` as a handle of this kind (already one: itself). Plain actors and Ray handles are wrapped."""
        return target if isinstance(target, cls) else cls(target)

    def kill(self) -> None:
        """End the actor: `ray.kill` for a Ray actor (already dead is fine); a plain object's thread is let go."""
        if is_ray_actor(self.target):
            import ray

            with contextlib.suppress(Exception):
                ray.kill(self.target)
        else:
            release(self.target)


class BrowserHandle(_Handle):
    """`browser_actors.actor.BrowserActor`: one isolated browser context, driven one action at a time."""

    async def reset(
        self,
        task: Task,
        sandbox: str | None = None,
        episode_id: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Observation:
        """`BrowserActor.reset`: the task's start page in a fresh context; the first observation."""
        return await call(self.target, "reset", task, sandbox, episode_id, timeout=timeout)

    async def step(self, action: Action, *, timeout: float | None = None) -> Observation:
        """`BrowserActor.step`: execute one parsed action; the next observation (a bad action is its error line)."""
        return await call(self.target, "step", action, timeout=timeout)

    async def final_state(self, *, timeout: float | None = None) -> FinalState:
        """`BrowserActor.final_state`: what the reward checks read (URL, page, sandbox, MiniWoB++ result)."""
        return await call(self.target, "final_state", timeout=timeout)


class RewardHandle(_Handle):
    """`reward.actor.RewardActor`: WebArena-Lite's checks of one finished episode."""

    async def score(self, task: Task, final: FinalState, *, timeout: float | None = None) -> Reward:
        """`RewardActor.ascore`: the episode's reward in {0, 1} (None: unscorable) with each check's sub-score."""
        return await call(self.target, "ascore", task, final, timeout=timeout)


class EngineHandle(_Handle):
    """`rollout_workers.inference.InferenceActor`: one vLLM engine, token ids in, token ids + logprobs out."""

    async def start(self) -> dict[str, Any]:
        """`InferenceActor.start`: build and warm the engine; its stats."""
        return await call(self.target, "start")

    async def shutdown(self, *, timeout: float | None = None) -> None:
        """`InferenceActor.shutdown`: stop vLLM's engine-core processes (a kill alone would orphan them)."""
        await call(self.target, "shutdown", timeout=timeout)

    async def generate(
        self, prompt_token_ids: list[int], *, timeout: float | None = None, **sampling: Any
    ) -> GenerateResult:
        """`InferenceActor.generate`: one completion for exact prompt ids (`sampling`: max_tokens, temperature,
        top_p, seed, stop_token_ids)."""
        return await call(self.target, "generate", prompt_token_ids, timeout=timeout, **sampling)

    async def stats(self, *, timeout: float | None = None) -> dict[str, Any]:
        """`InferenceActor.stats`: counters, `weight_version` and `tensor_parallel_size`."""
        return await call(self.target, "stats", timeout=timeout)

    async def update_weights(self, path_or_ref: Any, *, version: int) -> dict[str, Any]:
        """`InferenceActor.update_weights`: reload from a folder ("file") or an object-store payload; returns
        {"version", "seconds", "bytes", "reload_warnings"}."""
        return await call(self.target, "update_weights", path_or_ref, version=version)

    async def receive_nccl(
        self, names: list[str], dtype_names: list[str], shapes: list[list[int]], *, version: int
    ) -> dict[str, Any]:
        """`InferenceActor.receive_nccl`: the engine's side of one "nccl" broadcast push."""
        return await call(self.target, "receive_nccl", names, dtype_names, shapes, version=version)

    async def init_nccl(self, init_info: dict[str, Any]) -> None:
        """`InferenceActor.init_nccl`: join the learner's NCCL group."""
        await call(self.target, "init_nccl", init_info)

    async def reset_prefix_cache(self) -> None:
        """`InferenceActor.reset_prefix_cache`: drop cached KV blocks (benchmarks measure cold prompts)."""
        await call(self.target, "reset_prefix_cache")
