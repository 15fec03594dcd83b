"""Asynchronous group rollouts against a lockstep loop (the paper's code), same tasks, policy and actors.

    .venv/bin/python bench/bench_rollouts.py [--config configs/miniwob_cpu.yaml] [--tasks 8] [--group 4]
        [--browsers 8] [--checkpoint DIR]

Ours: `RolloutWorker.run_groups`: every episode advances on its own (its next generate as soon as its page is
back, a new group as soon as one finishes, up to scheduling.max_inflight_groups and the browsers there are). Lockstep:
the same worker, the same episode loop and actors, with two barriers added, as in a loop that batches turns: each
turn waits until every live episode of the wave has its reply before any browser acts, and until every browser is
back before the next turn; the next wave of groups starts when the whole wave is done. `--browsers` (8: two groups
of 4 at once) is the same for both. Both run the model at the rollout sampling settings, seeded the same, on the
same tasks; episodes per minute are compared, each arm starting with an empty prefix cache. The policy: `--checkpoint`, else the BC checkpoint
`bench/bench_overlap.py` made (runs/bench-overlap-bc) when there is one (a policy that finishes some episodes
early and plays others to the turn budget, as in RL), else the base model (which mostly rambles out after two
replies). Writes bench/results/rollouts.json.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from bench_overlap import existing_bc_checkpoint  # noqa: E402
from report import Figure, save  # noqa: E402


class Barrier:
    """Releases everyone waiting once every live party has arrived; a party leaves when its episode ends. The
    parties are known up front (every episode of the wave), as in a loop that resets them all, then batches turns."""

    def __init__(self, parties: int) -> None:
        self.parties, self.waiting, self._go = parties, 0, asyncio.Event()

    def leave(self) -> None:
        self.parties -= 1
        self._maybe_release()

    def _maybe_release(self) -> None:
        if self.waiting and self.waiting >= self.parties:
            self.waiting = 0
            self._go.set()
            self._go = asyncio.Event()

    async def arrive(self) -> None:
        go = self._go
        self.waiting += 1
        self._maybe_release()
        if not go.is_set():
            await go.wait()


class LockstepPolicy:
    """The model policy with a barrier before each generate and each browser step (see the module doc)."""

    def __init__(self, inner: Any, before_act: Barrier, before_step: Barrier) -> None:
        self.inner, self.before_act, self.before_step, self.source = (
            inner,
            before_act,
            before_step,
            inner.source,
        )
        self.ended: set[str] = set()

    async def act(self, episode_id, task, prompt_ids, obs, max_tokens):
        await self.before_act.arrive()
        reply = await self.inner.act(episode_id, task, prompt_ids, obs, max_tokens)
        await self.before_step.arrive()  # every reply of the turn is in before any page acts
        return reply

    def end(self, episode_id):
        if episode_id not in self.ended:  # every episode ends once, whether it acted or failed first
            self.ended.add(episode_id)
            self.before_act.leave()
            self.before_step.leave()
        self.inner.end(episode_id)


async def ours(worker, tasks, group: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    n = 0
    async for g in worker.run_groups(tasks, group):
        n += len(g.trajectories)
    return n, time.perf_counter() - t0


async def lockstep(worker, tasks, group: int) -> tuple[int, float]:
    from rollout_workers.policy import ModelPolicy

    wave = max(1, min(worker.cfg.scheduling.max_inflight_groups, worker.pool.size // group))
    t0 = time.perf_counter()
    n = 0
    for k in range(0, len(tasks), wave):
        batch = tasks[k : k + wave]
        parties = len(batch) * group
        policy = LockstepPolicy(
            ModelPolicy(worker.router, worker.sampling(False)), Barrier(parties), Barrier(parties)
        )
        groups = await asyncio.gather(*(worker.run_group(t, group, policy=policy) for t in batch))
        n += sum(len(g.trajectories) for g in groups)
    return n, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/miniwob_cpu.yaml")
    ap.add_argument("--checkpoint", default=None, help="model folder (default: see the module doc)")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--browsers", type=int, default=8)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    made = existing_bc_checkpoint()
    checkpoint = args.checkpoint or (str(made) if made else None)
    print(f"policy: {checkpoint or 'the base model (model.path)'}", flush=True)

    from common.config import load_config
    from rollout_workers.evaluate import stratified_sample
    from rollout_workers.stack import Stack, init_ray

    sets = [f"browser.num_browsers={args.browsers}", *args.set, "logging.run_name=bench-rollouts"]
    cfg = load_config(args.config, sets)
    init_ray(cfg)
    stack = Stack(cfg).start(checkpoint)
    try:
        tasks = stratified_sample(stack.tasks("train"), args.tasks, cfg.seed)
        results: dict[str, Any] = {}

        async def both() -> None:  # one event loop: the browser pool's queue belongs to it
            for name, fn in (("lockstep", lockstep), ("ours", ours)):
                # the same prompts again: neither arm may find the other's KV in the prefix cache
                await asyncio.gather(*(e.reset_prefix_cache() for e in stack.engines))
                n, secs = await fn(stack.worker, tasks, args.group)
                results[name] = {"episodes": n, "seconds": secs, "episodes_per_min": 60 * n / secs}
                print(
                    f"{name:9s}: {n} episodes in {secs:.1f}s = {60 * n / secs:.2f} episodes/min", flush=True
                )

        asyncio.run(both())
    finally:
        stack.close()
    ratio = results["ours"]["episodes_per_min"] / results["lockstep"]["episodes_per_min"]
    fig = Figure(
        "rollout episodes/min, ours / lockstep turns (same tasks, policy, actors)",
        f"{results['ours']['episodes_per_min']:.2f}/min",
        f"{results['lockstep']['episodes_per_min']:.2f}/min",
        ratio,
        ">= 1.5",
    )
    save(
        "rollouts",
        [fig],
        {
            "tasks": args.tasks,
            "group": args.group,
            "browsers": args.browsers,
            "policy": checkpoint,
            **results,
        },
    )


if __name__ == "__main__":
    main()
