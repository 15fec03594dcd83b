"""Groups of G episodes of one task, run in parallel in G browser actors, scored, and consumed as they finish.

    worker = RolloutWorker(pool, router, rewarder, builder, cfg, sandboxes)
    async for group in worker.run_groups(tasks, group_size=4):   # completion order, bounded in flight
        ...

A group is the unit of retry: if any of its episodes hits an infrastructure failure, the whole group is run again
(with fresh sandboxes, and the failed browser actors replaced), so the learner never sees half a group.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from common.config import TrainConfig
from common.records import Reward, TrajectoryGroup
from common.remote import call
from common.tasks import Task
from rollout_workers.episode import EpisodeResult, Sampling, run_episode


class BrowserPool:
    """A fixed set of browser actors lent out G at a time. `factory(i)` makes (or re-makes) actor i."""

    def __init__(self, factory: Callable[[int], Any], size: int):
        self._factory = factory
        self._actors = {i: factory(i) for i in range(size)}
        self._free: asyncio.Queue[int] | None = None
        self.size = size
        self.replaced = 0

    def _queue(self) -> asyncio.Queue[int]:
        if self._free is None:  # created lazily inside the running loop
            self._free = asyncio.Queue()
            for i in self._actors:
                self._free.put_nowait(i)
        return self._free

    @contextlib.asynccontextmanager
    async def lease(self, n: int):
        if n > self.size:
            raise ValueError(
                f"a group of {n} needs {n} browsers; the pool has {self.size} (rollout.num_browsers)"
            )
        q = self._queue()
        slots = [await q.get() for _ in range(n)]
        try:
            yield [(i, self._actors[i]) for i in slots]
        finally:
            for i in slots:
                q.put_nowait(i)

    def replace(self, i: int) -> None:
        """A timed-out or crashed actor is killed and recreated, never reused (STYLE 9)."""
        old = self._actors[i]
        with contextlib.suppress(Exception):
            import ray

            ray.kill(old)
        self._actors[i] = self._factory(i)
        self.replaced += 1

    def actors(self) -> list[Any]:
        return list(self._actors.values())


class RolloutWorker:
    def __init__(
        self,
        pool: BrowserPool,
        router: Any,
        rewarder: Any,
        builder: Any,
        cfg: TrainConfig,
        sandboxes: Any | None = None,
        on_group: Callable[[TrajectoryGroup], None] | None = None,
    ):
        self.pool, self.router, self.rewarder, self.builder = pool, router, rewarder, builder
        self.cfg, self.sandboxes, self.on_group = cfg, sandboxes, on_group
        self.infra_failures = 0

    def sampling(self, evaluation: bool) -> Sampling:
        inf = self.cfg.inference
        temp = inf.eval_temperature if evaluation else inf.temperature
        return Sampling(
            max_tokens=inf.max_new_tokens, temperature=temp, top_p=1.0 if evaluation else inf.top_p
        )

    async def run_group(
        self,
        task: Task,
        group_size: int,
        *,
        iteration: int = 0,
        evaluation: bool = False,
        max_turns: int | None = None,
    ) -> TrajectoryGroup:
        ro = self.cfg.rollout
        last: list[EpisodeResult] = []
        used: list[str | None] = []  # sandbox tokens of every attempt, dropped once the group is scored
        attempts = 0
        while attempts <= ro.group_retries:
            attempts += 1
            started = time.time()
            async with self.pool.lease(group_size) as browsers:
                tokens = [await self._new_sandbox() for _ in browsers]
                used += tokens
                last = await asyncio.gather(
                    *(
                        run_episode(
                            task,
                            browser=actor,
                            router=self.router,
                            builder=self.builder,
                            sampling=self.sampling(evaluation),
                            max_turns=max_turns or ro.max_turns,
                            grammar=ro.grammar,
                            thinking=ro.thinking,
                            sample_idx=k,
                            sandbox=tok,
                            step_timeout=ro.step_timeout_s,
                            max_context=self.cfg.model.max_context,
                        )
                        for k, ((_, actor), tok) in enumerate(zip(browsers, tokens, strict=True))
                    )
                )
                failed = [i for (i, _), r in zip(browsers, last, strict=True) if r.trajectory.failure]
                for i in failed:
                    self.pool.replace(i)
            if not failed:
                break
            self.infra_failures += len(failed)
        group = TrajectoryGroup(
            task_id=task.task_id, trajectories=[r.trajectory for r in last], iteration=iteration
        )
        if not group.failed:
            await self._score(task, last)
        if self.sandboxes is not None:
            await asyncio.gather(*(self.sandboxes.drop(t) for t in used if t), return_exceptions=True)
        for r in last:
            r.trajectory.meta.update({"attempts": attempts, "seconds": time.time() - started})
        if self.on_group is not None:
            self.on_group(group)
        return group

    async def _new_sandbox(self) -> str | None:
        return None if self.sandboxes is None else await self.sandboxes.new()

    async def _score(self, task: Task, results: list[EpisodeResult]) -> None:
        rewards: list[Reward] = await asyncio.gather(
            *(call(self.rewarder, "ascore", task, r.final) for r in results)
        )
        for r, rw in zip(results, rewards, strict=True):
            r.trajectory.reward = rw.score
            r.trajectory.checks = rw.checks
            if rw.error:
                r.trajectory.meta["reward_error"] = rw.error

    async def run_groups(
        self, tasks: list[Task], group_size: int, **kw: Any
    ) -> AsyncIterator[TrajectoryGroup]:
        """Yield groups in the order they finish, with at most rollout.max_inflight_groups in flight."""
        limit = max(1, min(self.cfg.rollout.max_inflight_groups, self.pool.size // group_size or 1))
        pending: set[asyncio.Task] = set()
        queue = list(tasks)
        while queue or pending:
            while queue and len(pending) < limit:
                pending.add(asyncio.create_task(self.run_group(queue.pop(0), group_size, **kw)))
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for d in done:
                yield d.result()
