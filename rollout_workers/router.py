"""`EngineRouter`: sends every turn of an episode to the same inference engine.

    router = EngineRouter(engines)            # InferenceActors or Ray handles to them (held as EngineHandles)
    res = await router.generate(episode_id, prompt_ids, max_tokens=256)
    router.release(episode_id)                # when the episode ends

Why sticky: the engines cache prompt prefixes, so an episode's next turn re-uses the KV cache of its history only on
the engine that served its last turn.

Health: a generate call that fails with a dead actor or exceeds `timeout_s` (inference.generate_timeout_s) takes its
engine out of service and raises `EngineDown`, an infrastructure failure (the episode's group is re-run on the
engines still serving). `heal(restore)` probes the engines out of service between iterations: one that answers with
the current weight version serves again; one that answers with another (Ray restarted it, and a restarted engine
holds the weights it was created with) gets `restore(i)` (a push of the current weights) and serves once its
version is right.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rollout_workers.handles import EngineHandle
from rollout_workers.inference import GenerateResult

log = logging.getLogger(__name__)


class EngineDown(RuntimeError):
    """An engine died, hung past its time-out, or none is serving: an infrastructure failure, never the agent's."""


def _actor_died(e: BaseException) -> bool:
    """A Ray actor that died or cannot be reached (checked by name: this module does not need Ray)."""
    names = {c.__name__ for c in type(e).__mro__}
    return bool(
        names & {"RayActorError", "ActorDiedError", "ActorUnavailableError", "ActorUnschedulableError"}
    )


class EngineRouter:
    """Routes each episode's turns to one engine: its history is the cached prefix there.

    A new episode goes to the engine with the fewest live episodes (ties: fewest requests in flight, then the
    lowest index); `release` ends the stickiness when the episode finishes. Engines are `InferenceActor`s, Ray
    handles to them or `EngineHandle`s (held as handles). Single event loop, no locks: every method is synchronous
    up to its first await.
    """

    def __init__(
        self, engines: Sequence[object], *, timeout_s: float | None = None, probe_timeout_s: float = 30.0
    ):
        if not engines:
            raise ValueError("EngineRouter needs at least one engine")
        self.engines = [EngineHandle.of(e) for e in engines]
        self.timeout_s, self.probe_timeout_s = timeout_s, probe_timeout_s
        self.version = 0  # the weights a serving engine holds; the driver sets it after each push
        self.down: dict[int, str] = {}  # engines out of service -> why
        self._home: dict[str, int] = {}
        self._episodes = [0] * len(self.engines)
        self._inflight = [0] * len(self.engines)

    def serving(self) -> list[int]:
        return [i for i in range(len(self.engines)) if i not in self.down]

    def engine_for(self, episode_id: str) -> int:
        """The index of the episode's engine, choosing the least-loaded serving one for a new episode."""
        home = self._home.get(episode_id)
        if home is None:
            live = self.serving()
            if not live:
                raise EngineDown(f"no engine is serving: {self.down}")
            home = min(live, key=lambda i: (self._episodes[i], self._inflight[i], i))
            self._home[episode_id] = home
            self._episodes[home] += 1
        elif home in self.down:
            raise EngineDown(f"engine {home} of this episode is out of service: {self.down[home]}")
        return home

    async def generate(self, episode_id: str, prompt_token_ids: list[int], **sampling: Any) -> GenerateResult:
        i = self.engine_for(episode_id)
        self._inflight[i] += 1
        try:
            return await self.engines[i].generate(prompt_token_ids, timeout=self.timeout_s, **sampling)
        except asyncio.TimeoutError as e:
            why = f"generate exceeded {self.timeout_s:.0f}s (inference.generate_timeout_s)"
            self.mark_down(i, why)
            raise EngineDown(f"engine {i}: {why}") from e
        except Exception as e:
            if not _actor_died(e):
                raise  # a bad request (too long a prompt, ...) is the caller's error, not the engine's
            self.mark_down(i, f"{type(e).__name__}: {str(e)[:200]}")
            raise EngineDown(f"engine {i} died: {type(e).__name__}") from e
        finally:
            self._inflight[i] -= 1

    def mark_down(self, i: int, why: str) -> None:
        if i not in self.down:
            log.warning("engine %d out of service: %s", i, why)
        self.down[i] = why

    async def probe(self, i: int) -> int:
        """The weight version engine i holds (raises when it does not answer within probe_timeout_s)."""
        stats = await self.engines[i].stats(timeout=self.probe_timeout_s)
        return int(stats["weight_version"])

    async def heal(self, restore: Callable[[int], Awaitable[Any]] | None = None) -> list[int]:
        """Put back in service the engines that answer with the current weights, after `restore(i)` for those
        that answer with other weights; returns the engines back in service. An engine that does not answer, or
        cannot be restored, stays out with the reason."""
        back = []
        for i in sorted(self.down):
            try:
                held = await self.probe(i)
                if held != self.version and restore is not None:
                    await restore(i)
                    held = await self.probe(i)
                if held != self.version:
                    raise EngineDown(f"holds weights v{held}, the run is at v{self.version}")
            except Exception as e:  # noqa: BLE001 - it stays out of service; the next heal tries again
                self.down[i] = f"{self.down[i]}; heal: {type(e).__name__}: {str(e)[:200]}"[-500:]
                continue
            del self.down[i]
            back.append(i)
            log.warning("engine %d back in service at weights v%d", i, self.version)
        return back

    def release(self, episode_id: str) -> None:
        """Forget the episode (unknown ids are ignored: release may run twice on an error path)."""
        home = self._home.pop(episode_id, None)
        if home is not None:
            self._episodes[home] -= 1

    def load(self) -> list[dict[str, int]]:
        return [
            {"engine": i, "episodes": e, "inflight": f}
            for i, (e, f) in enumerate(zip(self._episodes, self._inflight, strict=True))
        ]
