"""Engine health in the router, with small local engines (no Ray): an engine that hangs past the time-out or
dies goes out of service and the episode's call is an infrastructure failure; new episodes go to the engines still
serving; `heal` puts an engine back once it holds the current weights, restoring it first when it does not. The
real fault (a killed engine process restarted by Ray) is tested in tests/learner/test_weight_sync.py."""

from __future__ import annotations

import asyncio

import pytest

from rollout_workers.inference import GenerateResult
from rollout_workers.router import EngineDown, EngineRouter


class RayActorError(RuntimeError):
    """Named like Ray's: the router recognises a dead actor by the exception's class name."""


class Engine:
    def __init__(self, mode: str = "ok", version: int = 0):
        self.mode, self.version, self.calls = mode, version, 0

    async def generate(self, prompt, **kw):
        self.calls += 1
        if self.mode == "hang":
            await asyncio.sleep(60)
        if self.mode == "dead":
            raise RayActorError("The actor died unexpectedly before finishing this task.")
        if self.mode == "bad":
            raise ValueError("prompt longer than the context")
        return GenerateResult(
            completion_ids=[1],
            logprobs=[-0.1],
            finish_reason="stop",
            weight_version=self.version,
            seconds=0.0,
        )

    async def stats(self):
        if self.mode == "dead":
            raise RayActorError("still dead")
        return {"weight_version": self.version}


def test_a_hung_or_dead_engine_goes_out_of_service_and_new_episodes_avoid_it():
    hung, dead, ok = Engine("hang"), Engine("dead"), Engine()
    router = EngineRouter([hung, dead, ok], timeout_s=0.2)

    async def run():
        with pytest.raises(EngineDown, match="exceeded"):
            await router.generate("e0", [1])  # the first new episode goes to engine 0
        with pytest.raises(EngineDown, match="died"):
            await router.generate("e1", [1])
        with pytest.raises(EngineDown, match="out of service"):
            await router.generate("e0", [1])  # the episode stays failed; it is re-run as a new one
        for k in range(4):
            assert (await router.generate(f"n{k}", [1])).completion_ids == [1]

    asyncio.run(run())
    assert sorted(router.down) == [0, 1] and ok.calls == 4 and hung.calls == dead.calls == 1


def test_a_bad_request_is_the_callers_error_and_the_engine_stays_in_service():
    router = EngineRouter([Engine("bad")])
    with pytest.raises(ValueError, match="context"):
        asyncio.run(router.generate("e", [1]))
    assert not router.down


def test_no_engine_serving_is_a_clear_infrastructure_failure():
    router = EngineRouter([Engine("dead")])
    with pytest.raises(EngineDown):
        asyncio.run(router.generate("a", [1]))
    with pytest.raises(EngineDown, match="no engine is serving"):
        asyncio.run(router.generate("b", [1]))


def test_heal_restores_an_engine_with_old_weights_and_keeps_an_unreachable_one_out():
    restarted, dead = Engine("ok", version=0), Engine("dead")
    router = EngineRouter([restarted, dead, Engine("ok", version=3)])
    router.version = 3
    router.mark_down(0, "RayActorError: killed")
    router.mark_down(1, "RayActorError: killed")
    restored = []

    async def restore(i):
        restored.append(i)
        router.engines[
            i
        ].target.version = router.version  # the push of the current weights (to the engine itself)

    assert asyncio.run(router.heal(restore)) == [0]
    assert restored == [0] and list(router.down) == [1] and "heal" in router.down[1]
    # without a working restore the engine stays out: it must never serve old weights under the new version
    router.mark_down(0, "again")
    restarted.version = 1
    assert asyncio.run(router.heal(None)) == [] and 0 in router.down
