"""Groups of G episodes of one task, run in parallel in G browser actors, scored, and consumed as they finish.

    worker = RolloutWorker(pool, router, [RewardHandle(r) for r in rewarders], builder, cfg, sandboxes)
    async for group in worker.run_groups(tasks, group_size=4):   # completion order, bounded in flight
        ...

A group is the unit of retry: if any of its episodes hits an infrastructure failure, the whole group is run again
(with fresh sandboxes, and the failed browser actors replaced), so the learner never sees half a group.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from common.config import TrainConfig
from common.prompts import PromptBuilder
from common.records import FinalState, Reward, Trajectory, TrajectoryGroup
from common.tasks import Task
from rollout_workers.episode import EpisodeResult, EpisodeSettings, run_episode
from rollout_workers.handles import BrowserHandle, RewardHandle
from rollout_workers.policy import ModelPolicy, Policy, Sampling
from rollout_workers.router import EngineRouter
from rollout_workers.sandbox import Sandboxes


def _failed(task: Task, sample_idx: int, why: str) -> EpisodeResult:
    traj = Trajectory(
        task_id=task.task_id,
        sample_idx=sample_idx,
        intent=task.intent,
        sites=list(task.sites),
        failure=why[:500],
    )
    traj.termination = "error"
    return EpisodeResult(traj, None)


class BrowserPool:
    """A fixed set of browser actors lent out G at a time. `factory(i)` makes (or re-makes) actor i: a Ray handle
    or a plain `BrowserActor`, held as a `BrowserHandle`."""

    def __init__(self, factory: Callable[[int], object], size: int):
        self._factory = factory
        self._actors = {i: BrowserHandle.of(factory(i)) for i in range(size)}
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
                f"a group of {n} needs {n} browsers; the pool has {self.size} (browser.num_browsers)"
            )
        q = self._queue()
        slots = [await q.get() for _ in range(n)]
        try:
            yield [(i, self._actors[i]) for i in slots]
        finally:
            for i in slots:
                q.put_nowait(i)

    def replace(self, i: int) -> None:
        """A timed-out or crashed actor is killed and recreated, never reused: its page or process may still hold
        the failed episode's state."""
        self._actors[i].kill()
        self._actors[i] = BrowserHandle.of(self._factory(i))
        self.replaced += 1

    def actors(self) -> list[BrowserHandle]:
        return list(self._actors.values())


class RolloutWorker:
    def __init__(
        self,
        pool: BrowserPool,
        router: EngineRouter | None,
        rewarder: object | Sequence[object],
        builder: PromptBuilder,
        cfg: TrainConfig,
        sandboxes: Sandboxes | None = None,
        on_group: Callable[[TrajectoryGroup], None] | None = None,
    ):
        """`router` None: no engines (only the expert plays). `rewarder`: one reward actor or several (Ray handles,
        plain `RewardActor`s or `RewardHandle`s); episodes are spread over them in turn."""
        self.pool, self.router, self.builder = pool, router, builder
        rewarders = rewarder if isinstance(rewarder, list | tuple) else [rewarder]
        self.rewarders = [RewardHandle.of(r) for r in rewarders]
        self.episode = EpisodeSettings.from_config(cfg)  # what every episode plays by
        self._next_rewarder = 0
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
        policy: Policy | None = None,
    ) -> TrajectoryGroup:
        """`group_size` episodes of `task` in parallel; `policy` defaults to the model at the rollout (or, with
        `evaluation`, the evaluation) sampling settings."""
        sched = self.cfg.scheduling
        policy = policy or ModelPolicy(self.router, self.sampling(evaluation))
        settings = dataclasses.replace(self.episode, max_turns=max_turns) if max_turns else self.episode
        last: list[EpisodeResult] = []
        used: list[str | None] = []  # sandbox tokens of every attempt, dropped once the group is scored
        attempts = 0
        while attempts <= sched.group_retries:
            attempts += 1
            started = time.time()
            outage, tokens = None, []
            try:
                await self._prepare(task)
                for _ in range(group_size):
                    tokens.append(await self._new_sandbox())
            except Exception as e:  # noqa: BLE001 - a site or sandbox outage fails this attempt, not the run
                outage = f"environment: {type(e).__name__}: {e}"
            used += tokens
            if outage is not None:
                last = [_failed(task, k, outage) for k in range(group_size)]
                self.infra_failures += group_size
                # back off before the next attempt: a site that is restarting gets time to come back
                await asyncio.sleep(min(60.0, sched.retry_backoff_s * 2 ** (attempts - 1)))
                continue
            async with self.pool.lease(group_size) as browsers:
                last = await asyncio.gather(
                    *(
                        run_episode(
                            task,
                            browser=actor,
                            policy=policy,
                            builder=self.builder,
                            settings=settings,
                            sample_idx=k,
                            sandbox=tok,
                        )
                        for k, ((_, actor), tok) in enumerate(zip(browsers, tokens, strict=True))
                    )
                )
                failed = [i for (i, _), r in zip(browsers, last, strict=True) if r.trajectory.failure]
                for i, r in zip([i for i, _ in browsers], last, strict=True):
                    if r.trajectory.failure and r.trajectory.meta.get("failed_part") != "engine":
                        self.pool.replace(i)
            if not failed:
                break
            self.infra_failures += len(failed)
        group = TrajectoryGroup(
            task_id=task.task_id, trajectories=[r.trajectory for r in last], iteration=iteration
        )
        if not group.failed:
            t0 = time.perf_counter()
            await self._score(task, last)
            for r in last:  # the group's members are scored together: each waited this long
                r.trajectory.timings["score"] = time.perf_counter() - t0
        if self.sandboxes is not None:
            await asyncio.gather(*(self.sandboxes.drop(t) for t in used if t), return_exceptions=True)
        for r in last:
            r.trajectory.meta.update(
                {"attempts": attempts, "seconds": time.time() - started, "template": task.intent_template_id}
            )
        if self.on_group is not None:
            self.on_group(group)
        return group

    async def _new_sandbox(self) -> str | None:
        return None if self.sandboxes is None else await self.sandboxes.new()

    async def _prepare(self, task: Task) -> None:
        """A task with `require_reset` runs `environment.reset_command` first (real WebArena sites keep state).
        A failing or hanging command is an error, which fails the attempt like any environment outage."""
        command = self.cfg.environment.reset_command
        if not (task.require_reset and command):
            return
        proc = await asyncio.create_subprocess_shell(
            command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), self.cfg.environment.reset_timeout_s)
        except asyncio.TimeoutError:
            proc.kill()
            raise RuntimeError(
                f"reset_command exceeded {self.cfg.environment.reset_timeout_s:g} s: {command!r}"
            ) from None
        if proc.returncode != 0:
            tail = out.decode(errors="replace")[-300:]
            raise RuntimeError(f"reset_command exited with {proc.returncode}: {command!r}: {tail}")

    async def _score(self, task: Task, results: list[EpisodeResult]) -> None:
        rewards: list[Reward] = await asyncio.gather(*(self._score_one(task, r.final) for r in results))
        for r, rw in zip(results, rewards, strict=True):
            r.trajectory.reward = rw.score
            r.trajectory.checks = rw.checks
            if rw.error:
                r.trajectory.meta["reward_error"] = rw.error

    async def _score_one(self, task: Task, final: FinalState) -> Reward:
        """Score on the reward actors in turn; one that fails (dead actor, its browser gone) passes the episode to
        the next. When every one fails the episode is unscorable, with the errors, never an exception."""
        errors, start, n = [], self._next_rewarder, len(self.rewarders)
        self._next_rewarder += 1
        for k in range(n):
            rewarder = self.rewarders[(start + k) % n]
            try:
                return await rewarder.score(task, final, timeout=self.cfg.reward.timeout_s)
            except Exception as e:  # noqa: BLE001 - the next actor gets the episode
                errors.append(f"{type(e).__name__}: {e}"[:200])
        return Reward(score=None, error="every reward actor failed: " + " | ".join(errors))

    def parallel_groups(self, group_size: int) -> int:
        """Groups of `group_size` that can run at once: scheduling.max_inflight_groups, bounded by the browsers."""
        return max(1, min(self.cfg.scheduling.max_inflight_groups, self.pool.size // group_size or 1))

    async def run_groups(
        self, tasks: list[Task], group_size: int, **kw: Any
    ) -> AsyncIterator[TrajectoryGroup]:
        """Yield groups in the order they finish, with at most `parallel_groups(group_size)` in flight."""
        limit = self.parallel_groups(group_size)
        pending: set[asyncio.Task] = set()
        queue = list(tasks)
        while queue or pending:
            while queue and len(pending) < limit:
                pending.add(asyncio.create_task(self.run_group(queue.pop(0), group_size, **kw)))
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for d in done:
                yield d.result()
