"""The RL phase: M-GRPO iterations, each sample -> roll out -> update -> push -> record, in `RLPhase.iteration`.

    await RLPhase(parts, bc_checkpoint).run(start=learner_start.rl_steps)

One iteration, step by step (the functions a value passes through are listed in the README's "One RL iteration,
file by file"):
- sample + roll out (`roll_out`): the task sampler (learner/curriculum.py) draws tasks and `learner.collect.collect`
  runs their groups on the rollout worker, with dynamic sampling and expert guidance (learner/collect.py);
- update (`update`): `LearnerActor.rl_step` on the groups that carry signal;
- push: the new weights to every engine in service (learner/engine_sync.py);
- record (`record`): metrics, log.jsonl, rollouts.jsonl; a checkpoint every `learner.checkpoint_every`.
The steps around it, each on its own: overlap (`start_next`: the next iteration's rollouts start during this update,
`scheduling.overlap_with_learner`), stall back-off (`back_off`: every group failed, not an iteration), the resume
snapshot (`snapshot`: the sampler's state before the in-flight iteration drew, saved with each checkpoint).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from learner.bc_phase import demonstrations
from learner.collect import Draws, collect
from learner.curriculum import TaskSampler
from learner.progress import drop_iterations
from learner.run_parts import RunParts
from learner.stats import StepStats
from learner.weight_sync import PushStats
from rollout_workers.metrics import RolloutSummary, summarize
from rollout_workers.policy import ExpertPolicy


@dataclass
class RLClock:
    """The RL phase's wall time against `rl.time_budget_min`: the seconds its iterations took (stalls included; a
    resumed run starts from those saved with its checkpoint) and the longest iteration, which is what the next one
    is assumed to take."""

    budget_s: float | None = None  # None: no budget, rl.iterations alone
    used_s: float = 0.0
    longest_s: float = 0.0
    now: Callable[[], float] = time.monotonic

    def fits(self, ahead: int = 1, current_s: float = 0.0) -> bool:
        """Whether `ahead` more iterations, each as long as the longest so far (or `current_s`, the running one's
        time so far, when longer), still end inside the budget. With no iteration timed yet, the first starts."""
        if self.budget_s is None:
            return True
        return self.used_s + ahead * max(self.longest_s, current_s) <= self.budget_s

    def add(self, seconds: float, iteration: bool) -> None:
        """`seconds` of wall time spent; `iteration`: a completed iteration (a stall's back-off is not one)."""
        self.used_s += seconds
        if iteration:
            self.longest_s = max(self.longest_s, seconds)

    def state(self) -> dict[str, float]:
        return {"used_s": self.used_s, "longest_s": self.longest_s}

    def restore(self, state: dict[str, Any] | None) -> None:
        if state:
            self.used_s, self.longest_s = float(state["used_s"]), float(state["longest_s"])


class RLPhase:
    """The RL phase of one run, from the iteration the learner resumed at to `rl.iterations`, or to the last
    iteration that fits `rl.time_budget_min`."""

    def __init__(self, parts: RunParts, bc_checkpoint: str | None) -> None:
        self.parts, self.cfg, self.bc_checkpoint = parts, parts.cfg, bc_checkpoint
        self.learner = parts.need_learner()
        self.sampler: TaskSampler | None = None  # set by `setup`
        # plays one more member into all-failed groups (rl.expert_guidance), on the templates in `guided`
        self.expert: ExpertPolicy | None = None
        self.guided: set[int | str] | None = None  # None = any template
        # the next iteration's rollouts, started during an update (overlap)
        self.pending: asyncio.Task[Draws] | None = None
        self.stalled = 0  # tries in a row in which every group failed
        # the sampler before the in-flight iteration drew: what a checkpoint saves (resume)
        self.snapshot: dict[str, Any] = {}
        budget = self.cfg.rl.time_budget_min
        self.clock = RLClock(None if budget is None else budget * 60.0)
        self.started = 0.0  # clock.now() when the iteration in flight started

    async def run(self, start: int) -> int:
        """Iterations `start` .. rl.iterations - 1 (`start` > 0: resumed from a checkpoint), or fewer when the
        next would not end inside `rl.time_budget_min` (an iteration whose rollouts already started during the
        previous update runs anyway: its groups are played); then the phase's own checkpoint. Returns the number
        of iterations done."""
        sampler = await self.setup(start)
        it = start
        while it < self.cfg.rl.iterations:
            if self.pending is None and not self.clock.fits():
                self.out_of_time(it)
                break
            if await self.iteration(it):
                it += 1
        await self.learner.save_checkpoint(
            extra={"sampler": sampler.state(), "rl_clock": self.clock.state()}, tag="rl", iteration=it
        )
        return it

    async def iteration(self, it: int) -> bool:
        """One RL iteration: sample -> roll out -> update -> push -> record. False when every group failed (a
        stall: backed off, not an iteration)."""
        sampler, metrics = self.need_sampler(), self.parts.metrics
        self.started = self.clock.now()
        metrics.record_progress(it, self.stalled)
        draws = await self.roll_out(it)  # sample + roll out
        roll = summarize(draws.policy_groups(), draws.seconds)
        if draws.drawn and draws.outcomes.get("failed", 0) == draws.drawn:
            await self.back_off(it, draws, roll)  # nothing to train on
            self.clock.add(self.clock.now() - self.started, iteration=False)
            return False
        self.stalled = 0
        metrics.record_progress(it, self.stalled)
        roll.curriculum = sampler.weights()
        self.snapshot = sampler.state()  # resume: what the next checkpoint saves
        self.parts.log.save_groups(draws.groups, "rollouts.jsonl", append=True, phase="rl", iteration=it)
        self.start_next(it)  # overlap: the next rollouts run during this update
        stats = await self.update(draws)
        push = await self.parts.sync.push()
        self.record(it, draws, roll, stats, push)
        self.clock.add(self.clock.now() - self.started, iteration=True)
        await self.checkpoint(done=it + 1)
        return True

    # --- the steps of an iteration --------------------------------------------------------------------------------
    async def roll_out(self, it: int) -> Draws:
        """Iteration `it`'s groups: those started during the previous update (overlap), else drawn and played now,
        once the engines out of service are healed."""
        if self.pending is None:
            await self.parts.sync.heal()
            self.pending = self._collect(it)
        draws = await self.pending
        self.pending = None
        return draws

    def start_next(self, it: int) -> None:
        """Overlap: iteration it+1's rollouts start now, sampled with the weights of before this update; the push
        lands between engine requests, so each turn carries the one version that wrote it (lag <= 1 when it+1
        trains). Under `rl.time_budget_min` only when this iteration and the next, each as long as the longest so
        far, fit."""
        if not (self.cfg.scheduling.overlap_with_learner and it + 1 < self.cfg.rl.iterations):
            return
        if self.clock.fits(ahead=2, current_s=self.clock.now() - self.started):
            self.pending = self._collect(it + 1)

    def out_of_time(self, it: int) -> None:
        """The next iteration would not end inside `rl.time_budget_min`: the phase stops after `it` iterations,
        and says so in the log (its console line, the trackers; the report reads it)."""
        clock, rl = self.clock, self.cfg.rl
        record = {
            "phase": "rl_budget",
            "iterations": it,
            "of": rl.iterations,
            "budget_min": rl.time_budget_min,
            "used_min": round(clock.used_s / 60.0, 2),
            "longest_min": round(clock.longest_s / 60.0, 2),
        }
        # its console line: the iterations done of the cap, the minutes used of the budget
        self.parts.log.record(record)

    async def update(self, draws: Draws) -> StepStats:
        await self.parts.sync.heal()  # before the update: a restored engine gets the weights its peers hold
        return await self.learner.rl_step(draws.train)

    def record(self, it: int, draws: Draws, roll: RolloutSummary, stats: StepStats, push: PushStats) -> None:
        metrics = self.parts.metrics
        metrics.record_rollouts(roll)
        metrics.record_sampling(draws.to_json())
        metrics.record_update(stats.tokens_per_s)
        self.parts.log.record(
            {
                "phase": "rl",
                "iteration": it,
                "rollout": roll.to_json(),
                "sampling": draws.to_json(),
                "resting_tasks": self.need_sampler().resting(it + 1),
                "learner": stats.to_json(),
                "push": asdict(push),
            }
        )

    async def checkpoint(self, done: int) -> None:
        """Every `learner.checkpoint_every` iterations: a resumed run draws the in-flight iteration's tasks again
        from the snapshot, so it plays the same tasks."""
        every = self.cfg.learner.checkpoint_every
        if every and done % every == 0:
            await self.learner.save_checkpoint(
                extra={"sampler": self.snapshot, "rl_clock": self.clock.state()},
                tag=f"rl-{done}",
                iteration=done,
            )

    async def back_off(self, it: int, draws: Draws, roll: RolloutSummary) -> None:
        """Nothing to train on (every group hit an outage): not an iteration. Back off and try again, and give up
        clearly once the sites have stayed down for rl.max_stalled_iterations tries."""
        self.stalled += 1
        self.parts.metrics.record_progress(it, self.stalled)
        self.parts.log.record(
            {"phase": "rl_stalled", "iteration": it, "attempt": self.stalled, "rollout": roll.to_json()}
        )
        if self.stalled >= self.cfg.rl.max_stalled_iterations:
            first = draws.groups[0].trajectories[0].failure if draws.groups else "no groups"
            raise RuntimeError(
                f"RL iteration {it}: every group failed {self.stalled} times in a row (last: {first})"
            )
        await asyncio.sleep(min(300.0, self.cfg.scheduling.retry_backoff_s * 2**self.stalled))

    def _collect(self, it: int) -> asyncio.Task[Draws]:
        worker = self.parts.stack.worker
        assert worker is not None, "the stack is not started"
        return asyncio.create_task(
            collect(
                worker, self.need_sampler(), self.cfg, it, expert=self.expert, guided_templates=self.guided
            )
        )

    # --- before the first iteration ---------------------------------------------------------------------------
    async def setup(self, start: int) -> TaskSampler:
        """The sampler and the expert (`rl.*` filters), the learner's RL start, and on resume the sampler's saved
        state with the log records of the iterations that run again dropped."""
        sampler = self.sampler = await self._sampler_and_expert()
        begun = await self.learner.begin_rl(self.bc_checkpoint)
        out = self.parts.out
        if start:  # resumed: the sampler continues where the checkpoint left it; later iterations run again
            saved = await self.learner.driver_state()
            sampler.restore(saved.get("sampler"))
            self.clock.restore(saved.get("rl_clock"))
            dropped = drop_iterations(out / "log.jsonl", start, trajectories=False)
            dropped += drop_iterations(out / "rollouts.jsonl", start, trajectories=True)
            print(f"[train] resuming RL at iteration {start}; {dropped} records of later iterations dropped")
        print(
            f"[train] RL on {sampler.size} train tasks ({sampler.excluded} demonstration tasks left out); "
            f"reference: {begun['reference']}"
            + ("; Adam keeps BC's second moment" if begun.get("bc_second_moment") else "")
            + (
                f"; the lowest {begun['frozen_layers']} decoder layers and the embeddings frozen "
                f"({begun['trainable_params'] / 1e6:.1f}M parameters train)"
                if begun.get("frozen_layers")
                else ""
            )
            + ("; dynamic sampling" if self.cfg.rl.dynamic_sampling else "")
            + ("; expert guidance" if self.expert is not None else "")
            + (
                "; rollouts overlap the learner (one version of lag)"
                if self.cfg.scheduling.overlap_with_learner
                else ""
            ),
            flush=True,
        )
        self.snapshot = sampler.state()
        return sampler

    async def _sampler_and_expert(self) -> TaskSampler:
        """The task sampler (with the filters of rl.*), and the expert policy for guidance (None when off) with the
        templates it may guide (those it solved in the demonstrations; None = any)."""
        cfg, stack = self.cfg, self.parts.stack
        rl = cfg.rl
        demos, solved = [], None
        if rl.expert_solvable or rl.expert_guidance or rl.exclude_demo_tasks:
            demos, report = await demonstrations(self.parts)
            if report.get("by_template"):
                solved = {
                    int(k) if str(k).isdigit() else k for k, v in report["by_template"].items() if v["solved"]
                }
        exclude = {d.task_id for d in demos} if rl.exclude_demo_tasks else set()
        sampler = TaskSampler(stack.tasks("train"), rl, solved, seed=cfg.seed, exclude=exclude)
        if rl.expert_guidance:
            builder = stack.builder
            assert builder is not None, "the stack is not started"
            self.expert = ExpertPolicy(
                builder, cfg.prompt.grammar, cfg.prompt.thinking, style=cfg.bc.reply_style
            )
        self.guided = solved
        return sampler

    def need_sampler(self) -> TaskSampler:
        assert self.sampler is not None, "RLPhase.setup runs first"
        return self.sampler
