"""The learner's contract: a typed handle to the `LearnerActor`, each call bounded by a time-out that names it.

    learner = LearnerHandle(ray.remote(LearnerActor).options(name="learner").remote(cfg), cfg.learner)
    start = await learner.bring_up()                   # where a resumed learner stands
    stats = await learner.rl_step(groups)              # -> StepStats
    push = await learner.push_weights(engines, "file")

The driver crosses into the learner only here (tests/test_layering.py checks it), so a reader follows the iteration
from `learner/rl_phase.py` to the learner method it calls. A handle wraps a Ray actor handle (a run) or the plain
object (tests); the time-out is `learner.call_timeout_s` unless a call names its own (`bc.timeout_s` for BC).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common.config import LearnerConfig
from common.records import Trajectory, TrajectoryGroup
from common.remote import call
from learner.stats import BCSummary, StepStats
from learner.weight_sync import PushStats
from rollout_workers.handles import EngineHandle


@dataclass(frozen=True)
class LearnerStart:
    """Where the learner stands once it has loaded its newest checkpoint (nothing on a fresh start)."""

    rl_steps: int  # RL iterations already done: the RL phase continues at this one
    resumed: bool  # it started from a checkpoint
    model_path: str  # the folder the engines should start from (that checkpoint, else the initial model)
    weight_version: int  # the version of those weights


class LearnerHandle:
    """`learner.actor.LearnerActor`, called with a bound and a failure that names the call."""

    def __init__(self, target: object, cfg: LearnerConfig) -> None:
        self.target = target  # a Ray ActorHandle to a LearnerActor, or the plain object
        self.timeout_s = cfg.call_timeout_s

    async def _call(self, method: str, *args: Any, timeout: float | None, **kwargs: Any) -> Any:
        """The one crossing into the learner; `timeout` None waits as long as it takes."""
        try:
            return await call(self.target, method, *args, timeout=timeout, **kwargs)
        except asyncio.TimeoutError as e:
            raise TimeoutError(f"the learner's {method} gave no answer within {timeout:.0f}s") from e

    async def bring_up(self) -> LearnerStart:
        """`LearnerActor.resume`, `.resumed`, `.current_model_path`, `.weight_version`: where a (resumed) learner
        stands, read once at bring-up. Unbounded: the first answer waits for the actor's construction (model load,
        DeepSpeed start, resume)."""
        return LearnerStart(
            rl_steps=await self._call("resume", timeout=None),
            resumed=await self._call("resumed", timeout=None),
            model_path=await self._call("current_model_path", timeout=None),
            weight_version=await self._call("weight_version", timeout=None),
        )

    async def train_bc(
        self, train: list[Trajectory], held_out: list[Trajectory], *, timeout: float
    ) -> BCSummary:
        """`LearnerActor.train_bc`: behaviour cloning on the demonstrations, checked on the held-out ones."""
        return await self._call("train_bc", train, held_out, timeout=timeout)

    async def begin_rl(self, reference: str | None) -> dict[str, Any]:
        """`LearnerActor.begin_rl`: the KL reference (the BC checkpoint, else the current weights); a fresh
        optimizer for a fresh RL phase."""
        return await self._call("begin_rl", reference, timeout=self.timeout_s)

    async def driver_state(self) -> dict[str, Any]:
        """`LearnerActor.driver_state`: what the driver saved with the checkpoint it resumed from."""
        return await self._call("driver_state", timeout=self.timeout_s)

    async def rl_step(self, groups: list[TrajectoryGroup]) -> StepStats:
        """`LearnerActor.rl_step`: the M-GRPO update on finished groups."""
        return await self._call("rl_step", groups, timeout=self.timeout_s)

    async def push_weights(
        self, engines: Sequence[EngineHandle], method: str, *, version: int | None = None
    ) -> PushStats:
        """`LearnerActor.push_weights`: the current weights to `engines` (under `version`: the same weights again)."""
        return await self._call(
            "push_weights", list(engines), method, version=version, timeout=self.timeout_s
        )

    async def save_checkpoint(
        self,
        *,
        tag: str,
        extra: dict[str, Any] | None = None,
        iteration: int | None = None,
        optimizer: bool = True,
    ) -> str:
        """`LearnerActor.save_checkpoint`: a crash-safe checkpoint folder; its path."""
        return await self._call(
            "save_checkpoint",
            extra=extra,
            tag=tag,
            iteration=iteration,
            optimizer=optimizer,
            timeout=self.timeout_s,
        )

    def kill(self) -> None:
        """End the learner actor (a plain object has nothing to end)."""
        from common.remote import is_ray_actor

        if is_ray_actor(self.target):
            import ray

            ray.kill(self.target)
