"""The driver's side of the weight push: keep every engine in service on the learner's weights.

    sync = EngineSync(router, learner, cfg.learner.weight_sync, metrics, log)
    await sync.heal()           # before rollouts: engines out of service get the current weights and serve again
    push = await sync.push()    # after an update: the new weights to the engines in service (retried once)

The protocol, next to the router that tracks which engines serve (rollout_workers/router.py) and the learner's own
push (learner/weight_sync.py): a push goes to the serving engines; when it fails, each of them is probed, those that
do not answer go out of service, and the others get the same weights again under the next version. Engines out of
service are healed between iterations (`EngineRouter.heal`): one that holds other weights (Ray restarted it) gets
the current ones pushed under the current version first.
"""

from __future__ import annotations

import logging

from learner.learner_handle import LearnerHandle
from learner.run_log import RunLog
from learner.weight_sync import PushStats
from rollout_workers.metrics import RayMetrics
from rollout_workers.router import EngineRouter

log = logging.getLogger("learner.train")


class EngineSync:
    """Heal and push for one run: `router` knows which engines serve, `learner` pushes its weights to them."""

    def __init__(
        self,
        router: EngineRouter | None,
        learner: LearnerHandle | None,
        method: str,
        metrics: RayMetrics,
        run_log: RunLog,
    ) -> None:
        self.router, self.learner, self.method = router, learner, method
        self.metrics, self.run_log = metrics, run_log

    async def heal(self) -> None:
        """Engines out of service (dead, restarted by Ray, or hung) get the current weights and serve again."""
        router = self.router
        if router is None or not router.down:
            return
        learner = self.learner

        async def restore(i: int) -> None:
            if learner is None:  # no learner: the weights an engine starts with are the run's weights
                return
            await learner.push_weights([router.engines[i]], self.method, version=router.version)

        back = await router.heal(restore)
        self.run_log.record({"phase": "engines", "back_in_service": back, "down": dict(router.down)})

    async def push(self) -> PushStats:
        """Push the weights to the engines in service. An engine that fails during the push goes out of service
        (healed before the next rollouts) and the others get the same version again."""
        router, learner = self.router, self.learner
        assert router is not None and learner is not None, "a push needs engines and a learner"
        for attempt in (1, 2):
            serving = router.serving()
            if not serving:
                raise RuntimeError(f"no engine is serving: {router.down}")
            version = None if attempt == 1 else router.version + 1
            try:
                stats = await learner.push_weights(
                    [router.engines[i] for i in serving], self.method, version=version
                )
                break
            except Exception as e:
                if attempt == 2:
                    raise
                for i in serving:
                    try:
                        await router.probe(i)
                    except Exception as why:  # noqa: BLE001 - this engine is what failed the push
                        router.mark_down(i, f"weight push: {type(why).__name__}: {why}"[:300])
                log.warning("weight push failed (%s); again to the engines still serving", e)
        router.version = stats.version
        self.metrics.record_push(stats.seconds, stats.method)
        print(
            f"[train] weights pushed: {stats.bytes / 1e6:.0f} MB in {stats.seconds:.2f}s ({stats.method})",
            flush=True,
        )
        return stats
