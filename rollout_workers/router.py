"""`EngineRouter`: sends every turn of an episode to the same inference engine.

    router = EngineRouter(engines)            # InferenceActors or Ray handles to them
    res = await router.generate(episode_id, prompt_ids, max_tokens=256)
    router.release(episode_id)                # when the episode ends

Why sticky: the engines cache prompt prefixes, so an episode's next turn re-uses the KV cache of its history only on
the engine that served its last turn.
"""

from __future__ import annotations

from typing import Any

from common.remote import call
from rollout_workers.inference import GenerateResult


class EngineRouter:
    """Routes each episode's turns to one engine: its history is the cached prefix there.

    A new episode goes to the engine with the fewest live episodes (ties: fewest requests in flight, then the
    lowest index); `release` ends the stickiness when the episode finishes. Engines are `InferenceActor`s or Ray
    handles. Single event loop, no locks: every method is synchronous up to its first await.
    """

    def __init__(self, engines: list[Any]):
        if not engines:
            raise ValueError("EngineRouter needs at least one engine")
        self.engines = list(engines)
        self._home: dict[str, int] = {}
        self._episodes = [0] * len(self.engines)
        self._inflight = [0] * len(self.engines)

    def engine_for(self, episode_id: str) -> int:
        """The index of the episode's engine, choosing the least-loaded one for a new episode."""
        home = self._home.get(episode_id)
        if home is None:
            home = min(range(len(self.engines)), key=lambda i: (self._episodes[i], self._inflight[i], i))
            self._home[episode_id] = home
            self._episodes[home] += 1
        return home

    async def generate(self, episode_id: str, prompt_token_ids: list[int], **sampling: Any) -> GenerateResult:
        i = self.engine_for(episode_id)
        self._inflight[i] += 1
        try:
            return await call(self.engines[i], "generate", prompt_token_ids, **sampling)
        finally:
            self._inflight[i] -= 1

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
